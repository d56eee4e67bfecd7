"""Pre-v10 and non-canonical constructs that are refused, each with its replacement.

These shapes still circulate in older NoETL playbooks and docs. Silently ignoring
them would run a different flow than the author meant (a step ``when`` that never
gates, a ``retry`` block that never retries), so each one is an error whose fix names
the v10 construct that replaces it. One table per scope keeps the rules in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import paths
from .diagnostics import Reporter

__all__ = ["STEP_TOOL_KEYS", "reject_step_keys", "reject_task_keys", "reject_root_keys"]

# Keys that configure a tool; written directly on a step they belong under ``tool:``.
STEP_TOOL_KEYS = frozenset({
    "kind", "code", "command", "commands", "cmd", "script", "url", "endpoint", "method", "params",
    "headers", "json", "body", "data", "payload", "query", "sql", "auth", "credentials",
    "connection", "path", "libs", "args", "timeout", "return_step", "task",
})

# key -> (code, message); shared by steps and tasks.
_LEGACY: dict[str, tuple[str, str]] = {
    "case": ("NTL205", "`case` blocks are not part of v10"),
    "retry": ("NTL206", "`retry` blocks are not part of v10"),
    "sink": ("NTL207", "`sink` blocks are not part of v10"),
    "eval": ("NTL208", "`eval` is not part of v10"),
    "expr": ("NTL208", "`expr` is not part of v10"),
}

_TASK_WHEN_FIX = ("tasks always run in order: branch inside a pipeline with a policy rule on the "
                  "previous task (`then: {do: jump, to: <label>}` or `do: break`), or gate the whole "
                  "step with `spec.policy.admit.rules`")


def reject_root_keys(root: Mapping[str, Any], reporter: Reporter) -> None:
    if "vars" in root:
        reporter.add("NTL102", "root `vars` is not part of v10", "vars")


def reject_step_keys(step: Mapping[str, Any], path: str, reporter: Reporter) -> set[str]:
    """Report legacy keys on a step; returns the keys that were reported."""
    found: set[str] = set()
    for key in step:
        key_path = paths.join(path, key)
        if key == "when":
            reporter.add("NTL204", "step `when` is not part of v10", key_path)
        elif key in _LEGACY:
            code, message = _LEGACY[key]
            reporter.add(code, message, key_path)
        elif key == "type":
            reporter.add("NTL209", f"step `type: {step[key]}` is not part of v10", key_path,
                         fix=f"declare the tool: `tool: {{kind: {step[key]}, ...}}`"
                         if isinstance(step[key], str) else None)
        elif key in STEP_TOOL_KEYS:
            reporter.add("NTL210", f"`{key}` is a tool setting written directly on the step", key_path,
                         fix=f"move `{key}:` under `tool:`")
        else:
            continue
        found.add(key)
    return found


def reject_task_keys(task: Mapping[str, Any], path: str, reporter: Reporter) -> set[str]:
    """Report legacy keys on a tool task; returns the keys that were reported."""
    found: set[str] = set()
    for key in task:
        key_path = paths.join(path, key)
        if key == "when":
            reporter.add("NTL204", "task `when` is not part of v10", key_path, fix=_TASK_WHEN_FIX)
        elif key in _LEGACY:
            code, message = _LEGACY[key]
            reporter.add(code, message, key_path)
        elif key == "type" and "kind" not in task:
            reporter.add("NTL209", f"`type: {task[key]}` is not part of v10", key_path,
                         fix=f"write `kind: {task[key]}`" if isinstance(task[key], str) else "write `kind:`")
        else:
            continue
        found.add(key)
    return found
