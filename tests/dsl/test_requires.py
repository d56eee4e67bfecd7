"""``executor.requires`` (NoETL 5.x): a playbook that requires what this worker lacks fails
validation with the missing item named (NTL106, docs/semantics.md)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl.requires import FEATURES
from noetl_temporal.tool_kinds import TOOL_KINDS

from .helpers import errors, find, playbook


def pb(tools: str, features: str) -> str:
    return playbook(f"executor:\n  requires:\n    tools: {tools}\n    features: {features}\n"
                    "workflow:\n  - step: s\n    tool: {kind: noop}\n")


def test_what_the_worker_has_validates():
    assert errors(pb(f"[{', '.join(TOOL_KINDS)}]", f"[{', '.join(FEATURES)}]")) == []


@pytest.mark.parametrize("tools, features, item, path, says", [
    ("[python, snowflake]", "[]", "snowflake", "executor.requires.tools[1]", "NoETL tool that noetl-temporal"),
    ("[pyhton]", "[]", "pyhton", "executor.requires.tools[0]", "did you mean 'python'"),
    ("[]", "[result_storage, ai_meta]", "ai_meta", "executor.requires.features[1]", "feature 'ai_meta'"),
])
def test_each_missing_item_is_named_and_located(tools, features, item, path, says):
    text = pb(tools, features)
    (diag,) = errors(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == ("NTL106", path, find(text, item))
    assert says in diag.message and repr(item) in diag.message


def test_requires_is_closed():
    (diag,) = errors(pb("[]", "[]").replace("    features: []", "    feature: [x]"))
    assert diag.code == "NTL902"
