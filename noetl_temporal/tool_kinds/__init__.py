"""The tool kinds: what each declares (``<kind>.py``) and the name lists derived from them.

Pure data, no imports of the tools: the DSL validates ``kind:`` and every task's settings
with it without importing the tool modules (HTTP clients, subprocesses, database drivers).
``noetl_temporal.tools`` registers exactly :data:`REGISTRY_KINDS`, each tool pointing at
its declaration (checked by tests/tools/test_tool_kinds.py).
"""

from __future__ import annotations

from .activity import ACTIVITY
from .approve import APPROVE
from .artifact import ARTIFACT
from .declaration import ToolKind
from .duckdb import DUCKDB
from .http import HTTP
from .nats import NATS
from .noop import NOOP
from .playbook import PLAYBOOK
from .postgres import POSTGRES
from .python import PYTHON
from .result import RESULT
from .shell import SHELL
from .subscription import SUBSCRIPTION
from .transfer import TRANSFER
from .workflow import WORKFLOW

__all__ = ["DECLARATIONS", "TOOL_KINDS", "WORKFLOW_KINDS", "REGISTRY_KINDS", "LOAD_TIME_KINDS",
           "INLINE_KINDS", "IN_WORKFLOW_KINDS", "READS_RESULT_REFS", "CREDENTIAL_KINDS", "NAMED_KINDS", "ToolKind",
           "declaration"]

#: every kind a task may name at run time, in the order messages list them
DECLARATIONS: dict[str, ToolKind] = {d.kind: d for d in (NOOP, PYTHON, SHELL, HTTP, POSTGRES, DUCKDB,
                                                         PLAYBOOK, RESULT, ACTIVITY, WORKFLOW, APPROVE,
                                                         NATS, SUBSCRIPTION, TRANSFER, ARTIFACT)}

TOOL_KINDS: tuple[str, ...] = tuple(DECLARATIONS)

#: kinds whose configuration the workflow uses itself, one attempt each (``noop`` inline,
#: ``playbook`` as a child workflow): never sent to an activity
IN_WORKFLOW_KINDS: frozenset[str] = frozenset(k for k, d in DECLARATIONS.items() if d.runs_in == "workflow")

#: kinds the engine completes in place, without an activity
INLINE_KINDS: frozenset[str] = frozenset(k for k, d in DECLARATIONS.items() if d.inline)

#: kinds the workflow runs itself that are not a registered tool (``playbook``: a child workflow;
#: ``activity`` and ``workflow``: a user's own activity or child workflow, by type name)
WORKFLOW_KINDS: frozenset[str] = IN_WORKFLOW_KINDS - INLINE_KINDS

#: kinds the tool registry (``noetl_temporal.tools.TOOLS``) runs as activities (``noop`` is
#: registered too, for callers of ``run_tool``, though the engine completes it inline)
REGISTRY_KINDS: tuple[str, ...] = tuple(k for k in TOOL_KINDS if k not in WORKFLOW_KINDS)

#: kinds whose tool reads ResultRefs itself (the activity leaves them unresolved)
READS_RESULT_REFS: frozenset[str] = frozenset(k for k, d in DECLARATIONS.items() if d.reads_result_refs)

#: kinds the activity always prepares the keychain for
CREDENTIAL_KINDS: frozenset[str] = frozenset(k for k, d in DECLARATIONS.items() if d.credentials is not None)

#: kinds whose ``name:`` is a setting (the type name of a user's activity or workflow) as
#: well as the task's label when no other label is given
NAMED_KINDS: frozenset[str] = frozenset(k for k, d in DECLARATIONS.items() if any(s.name == "name" for s in d.settings))

#: kinds the loader resolves away (``workbook``: replaced by the entry it names)
LOAD_TIME_KINDS: tuple[str, ...] = ("workbook",)


def declaration(kind: str) -> ToolKind | None:
    return DECLARATIONS.get(kind)
