"""The tool kinds: one list the tool registry and the DSL share.

Pure names, no imports: the DSL validates ``kind:`` with it without importing the tool
modules (HTTP clients, subprocesses, database drivers). ``noetl_temporal.tools``
registers exactly :data:`REGISTRY_KINDS` (checked by tests/tools/test_tool_kinds.py).
"""

from __future__ import annotations

__all__ = ["TOOL_KINDS", "WORKFLOW_KINDS", "REGISTRY_KINDS", "LOAD_TIME_KINDS"]

#: every kind a task may name at run time, in the order messages list them
TOOL_KINDS: tuple[str, ...] = ("noop", "python", "shell", "http", "postgres", "duckdb", "playbook", "result")

#: kinds the workflow runs itself (``playbook``: a child workflow), not a registered tool
WORKFLOW_KINDS: frozenset[str] = frozenset({"playbook"})

#: kinds the tool registry (``noetl_temporal.tools.TOOLS``) runs as activities
REGISTRY_KINDS: tuple[str, ...] = tuple(k for k in TOOL_KINDS if k not in WORKFLOW_KINDS)

#: kinds the loader resolves away (``workbook``: replaced by the entry it names)
LOAD_TIME_KINDS: tuple[str, ...] = ("workbook",)
