"""The tool-kind list the DSL validates with is the tool registry's list."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from noetl_temporal.dsl import validate_text
from noetl_temporal.dsl.models import KNOWN_TOOL_KINDS
from noetl_temporal.dsl.tasks import ALL_KINDS
from noetl_temporal.tool_kinds import LOAD_TIME_KINDS, REGISTRY_KINDS, TOOL_KINDS, WORKFLOW_KINDS
from noetl_temporal.tools import BUILTIN_TOOLS, TOOLS


def test_registry_runs_exactly_the_registry_kinds():
    kinds = [tool.kind for tool in BUILTIN_TOOLS]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == set(REGISTRY_KINDS)
    assert all(TOOLS[kind] is tool for kind, tool in zip(kinds, BUILTIN_TOOLS, strict=True))


def test_dsl_kinds_are_the_registry_kinds_and_the_workflow_kinds():
    assert KNOWN_TOOL_KINDS == TOOL_KINDS
    assert set(KNOWN_TOOL_KINDS) == set(REGISTRY_KINDS) | WORKFLOW_KINDS
    assert not WORKFLOW_KINDS & set(REGISTRY_KINDS)
    assert ALL_KINDS == (*TOOL_KINDS, *LOAD_TIME_KINDS)


def _codes(kind: str) -> list[str]:
    text = textwrap.dedent(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: kinds}}
        workflow:
          - step: start
            tool: {{kind: {kind}}}
        """)
    return [d.code for d in validate_text(text, "<test>")]


def test_the_validator_accepts_every_kind_and_names_them_all_when_refusing():
    for kind in TOOL_KINDS:
        assert "NTL302" not in _codes(kind), kind
    text = textwrap.dedent("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: kinds}
        workflow:
          - step: start
            tool: {kind: teradata}  # not a NoETL kind either (those are NTL320)
        """)
    [refusal] = [d for d in validate_text(text, "<test>") if d.code == "NTL302"]
    for kind in ALL_KINDS:
        assert kind in str(refusal)


def test_the_dsl_does_not_import_the_tool_modules():
    probe = ("import json, sys, noetl_temporal.dsl; "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('noetl_temporal.tools') "
             "or m == 'httpx')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
