"""``executor.requires`` (NoETL 5.x): a playbook that requires what this worker lacks fails
validation with the missing tool kind named (NTL106, docs/semantics.md); a feature name no
worker provides is a warning (NTL340): NoETL does not check feature names, and runs the playbook."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl.requires import FEATURES
from noetl_temporal.tool_kinds import TOOL_KINDS

from .helpers import errors, find, playbook, warnings


def pb(tools: str, features: str) -> str:
    return playbook(f"executor:\n  requires:\n    tools: {tools}\n    features: {features}\n"
                    "workflow:\n  - step: s\n    tool: {kind: noop}\n")


def test_what_the_worker_has_validates():
    assert errors(pb(f"[{', '.join(TOOL_KINDS)}]", f"[{', '.join(FEATURES)}]")) == []


@pytest.mark.parametrize("tools, features, item, path, says", [
    ("[python, snowflake]", "[]", "snowflake", "executor.requires.tools[1]", "NoETL tool that noetl-temporal"),
    ("[pyhton]", "[]", "pyhton", "executor.requires.tools[0]", "did you mean 'python'"),
])
def test_each_missing_item_is_named_and_located(tools, features, item, path, says):
    text = pb(tools, features)
    (diag,) = errors(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == ("NTL106", path, find(text, item))
    assert says in diag.message and repr(item) in diag.message


def test_requires_is_closed():
    (diag,) = errors(pb("[]", "[]").replace("    features: []", "    feature: [x]"))
    assert diag.code == "NTL902"


def test_a_feature_no_worker_provides_warns_and_the_playbook_is_valid_as_on_noetl():
    text = pb("[]", "[result_storage, ai_meta]")
    assert errors(text) == []
    (diag,) = warnings(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == ("NTL340", "executor.requires.features[1]",
                                                              find(text, "ai_meta"))
    assert "feature 'ai_meta'" in diag.message and "NoETL does not check" in diag.message
