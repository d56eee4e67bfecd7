"""Which filters and tests a template the *workflow* renders may use: a reviewed table.

Guards (``when``), ``set``, step and arc ``args``, ``loop.in`` and the settings of the kinds
the workflow runs itself (a ``noop`` task's result, a sub-playbook's settings) render inside
a workflow activation, where Temporal's deadlock detector allows 2 s and a C call that holds
the GIL cannot be interrupted by any budget. So there only operations whose cost is bounded
by their (bounded) input, and paid for by ``templates.limits``, are allowed. The others are
``task``-only: they render in a task's activity (a python, shell, http, postgres or duckdb
tool's settings). Every filter and test the sandbox exposes has a row here (a test checks
it), and ``docs/durability.md``'s table is generated from this one (a test keeps it equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Operation", "OPERATIONS", "WORKFLOW", "TASK", "task_only", "markdown"]

WORKFLOW: Literal["workflow"] = "workflow"
TASK: Literal["task"] = "task"


@dataclass(frozen=True)
class Operation:
    kind: Literal["filter", "test"]
    name: str
    allowed: Literal["workflow", "task"]   # "workflow": anywhere; "task": a task's settings only
    reason: str


def _filters(allowed: Literal["workflow", "task"], reason: str, *names: str) -> list[Operation]:
    return [Operation("filter", name, allowed, reason) for name in names]


def _tests(allowed: Literal["workflow", "task"], reason: str, *names: str) -> list[Operation]:
    return [Operation("test", name, allowed, reason) for name in names]


_TABLE: list[Operation] = [
    # ---------------------------------------------------------------- filters, workflow
    *_filters(WORKFLOW, "reads one value or a length: constant work",
              "abs", "attr", "count", "d", "default", "first", "last", "float", "int", "length", "round",
              "safe", "filesizeformat"),
    *_filters(WORKFLOW, "one linear pass in C over a string bounded by MAX_SIZE, paid per 256 characters",
              "lower", "upper", "capitalize", "trim", "truncate", "b64encode", "b64decode", "e", "escape",
              "forceescape", "urlencode", "fromjson", "from_json", "wordcount"),
    *_filters(WORKFLOW, "its output size is predicted before it is built (MAX_SIZE) and its work paid",
              "center", "indent", "replace", "format", "join", "tojson", "to_json", "string", "xmlattr"),
    *_filters(WORKFLOW, "a word-level regex (`[-\\s(...]+`) with a callback per word, each word paid",
              "title"),
    *_filters(WORKFLOW, "item by item, each item paid (a generator is metered as it yields)",
              "list", "map", "select", "reject", "selectattr", "rejectattr", "reverse", "items", "max",
              "min", "batch", "slice", "unique", "sum"),
    *_filters(WORKFLOW, "`n log n` comparisons, paid before it runs", "sort", "dictsort", "groupby"),
    # ---------------------------------------------------------------- filters, task only
    *_filters(TASK, "its URL regex is quadratic in one C call that no budget can interrupt (10,000 "
                    "characters took 2.7 CPU-s, 20,000 took 12 s)", "urlize"),
    *_filters(TASK, "its tag regex `<[^>]*>` rescans to the end from every `<` without a `>`: quadratic "
                    "in one C call", "striptags"),
    *_filters(TASK, "textwrap: pure-Python regex work per chunk, seconds on a long text", "wordwrap"),
    *_filters(TASK, "pure-Python pretty printer: several microseconds per item, past the 2 s detector "
                    "within the work budget", "pprint"),
    # ---------------------------------------------------------------- tests, workflow
    *_tests(WORKFLOW, "reads a type, a value or a length: constant work",
            "boolean", "callable", "defined", "divisibleby", "escaped", "even", "false", "filter", "float",
            "integer", "iterable", "mapping", "none", "number", "odd", "sameas", "sequence", "string", "test",
            "true", "undefined"),
    *_tests(WORKFLOW, "a comparison: paid for what it reads (a string's length, a list's items)",
            "!=", "<", "<=", "==", ">", ">=", "eq", "equalto", "ge", "greaterthan", "gt", "in", "le",
            "lessthan", "lt", "ne"),
    *_tests(WORKFLOW, "one linear pass in C over the string, paid per character", "lower", "upper"),
]

OPERATIONS: dict[tuple[str, str], Operation] = {(op.kind, op.name): op for op in _TABLE}


def task_only(kind: str, name: str) -> Operation | None:
    """The row of a filter or test a workflow-side template may not use, else None (unknown
    names are NTL701's and Jinja's business: they fail as they always did)."""
    op = OPERATIONS.get((kind, name))
    return op if op is not None and op.allowed == TASK else None


def markdown() -> str:
    """The table in ``docs/durability.md`` between its ``template-ops`` markers (a test keeps it equal)."""
    lines = ["| kind | name | where | why |", "|---|---|---|---|"]
    for op in sorted(_TABLE, key=lambda o: (o.kind, o.allowed != WORKFLOW, o.name)):
        where = "anywhere" if op.allowed == WORKFLOW else "a task's settings only (NTL706 elsewhere)"
        lines.append(f"| {op.kind} | `{op.name}` | {where} | {op.reason} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":   # regenerate the docs table: python -m noetl_temporal.dsl.template_ops
    print(markdown(), end="")
