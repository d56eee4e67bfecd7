"""The tool-kind list the DSL validates with is the tool registry's list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

from noetl_temporal.dsl import validate_text
from noetl_temporal.dsl.models import KNOWN_TOOL_KINDS
from noetl_temporal.dsl.tasks import ALL_KINDS
from noetl_temporal.tool_kinds import (
    DECLARATIONS,
    LOAD_TIME_KINDS,
    REGISTRY_KINDS,
    TOOL_KINDS,
    WORKFLOW_KINDS,
)
from noetl_temporal.tool_kinds.docs import BEGIN, END, markdown
from noetl_temporal.tools import BUILTIN_TOOLS, TOOLS

from ..conftest import REPO


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


def test_each_tool_points_at_its_kinds_declaration():
    for tool in BUILTIN_TOOLS:
        assert tool.declaration is DECLARATIONS[tool.kind]
        assert tool.declaration.runs_in == "activity" or tool.declaration.inline


def test_the_traits_the_runtime_reads_come_from_the_declarations():
    from noetl_temporal import attempt, keychain
    from noetl_temporal.engine import pipeline, task_plans

    assert pipeline.INLINE_KINDS == {"noop"}
    # rendered in the workflow, not the activity (engine/task_plans.py); replay: unchanged sets
    # (`activity`, `workflow` and `approve` are new kinds: no recorded history has them)
    assert task_plans.tool_kinds.IN_WORKFLOW_KINDS == {"noop", "playbook", "activity", "workflow", "approve"}
    assert attempt._READS_REFS == {"result", "artifact"}  # a new kind: no history has it
    assert keychain.needs_keychain("postgres", {}) and not keychain.needs_keychain("http", {})
    assert keychain.needs_keychain("transfer", {})
    assert WORKFLOW_KINDS == {"playbook", "activity", "workflow", "approve"}


def test_every_required_key_and_ignored_key_is_declared_once():
    for decl in DECLARATIONS.values():
        keys = decl.keys()
        assert len(keys) == len(set(keys)), decl.kind
        for group in decl.required:
            assert all(decl.setting(key) is not None for key in group), decl.kind
        assert not set(decl.ignored) & set(keys), decl.kind


def test_the_settings_section_of_tools_md_is_generated_from_the_declarations():
    page = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    start, end = page.index(BEGIN), page.index(END) + len(END) + 1
    assert page[start:end] == markdown(), "regenerate: python -m noetl_temporal.tool_kinds.docs"


def test_the_hand_written_tables_of_tools_md_name_only_declared_keys():
    """Every key in the first column of a ``## `kind` `` section's table is declared."""
    page = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    page = page[:page.index(BEGIN)] + page[page.index(END):]
    kind = None
    for line in page.splitlines():
        heading = re.match(r"^## `(\w+)`", line)
        if heading or line.startswith("## "):
            kind = heading.group(1) if heading else None
        elif kind and line.startswith("| `"):
            for key in re.findall(r"`(\w+)`", line.split("|")[1]):
                assert DECLARATIONS[kind].setting(key) is not None, (kind, key)
