"""Find Jinja2 syntax errors in every template string of the source, with its position,
templates that read ``keychain`` where secrets are not allowed (NTL704), and templates the
workflow renders that use a filter or test only a task may use (NTL706, ``template_ops``).

Secrets render only inside a task's activity, in its tool settings (``keychain.prepare``);
anywhere else (``set``, ``args``, ``when``, ``loop.in``, ``workload``) the workflow renders
the template without them and it silently became null.

Checked on the raw document (not the normalized one) because every string keeps its
exact source path there; normalization does not change template syntax. Tool
settings such as ``code`` and ``command`` are rendered too, so they are checked like
any other string.
"""

from __future__ import annotations

import re
from typing import Any

from ..templates import is_template, reads_name
from ..tool_kinds import IN_WORKFLOW_KINDS
from . import paths
from .diagnostics import Reporter
from .template_ops import task_only
from .template_scan import operations, syntax_problem

__all__ = ["check_templates"]

# Go templates (`docker --format`, `kubectl -o go-template`) quote their own braces as
# {{`{{json .}}`}}; Jinja2 has no backquotes, so a shell command copied from them fails here.
_GO_QUOTE_FIX = ("{{`...`}} is Go-template quoting, not Jinja2: write the braces as a Jinja string, "
                 "{{ '{{json .}}' }}, or wrap the text in {% raw %}...{% endraw %}")

_reads_keychain = reads_name("keychain")
_SEGMENT = re.compile(r"[^.\[\]]+")
# Under a tool, these are rendered by the workflow (task policies, set, guards), not the activity.
_WORKFLOW_SIDE = frozenset({"set", "set_ctx", "set_iter", "set_vars", "when", "spec", "policy", "next"})


def _secrets_allowed(where: str) -> bool:
    segments = _SEGMENT.findall(where)
    if segments[:1] == ["keychain"]:
        return True   # the declarations themselves
    if "tool" not in segments:
        return False
    return not _WORKFLOW_SIDE.intersection(segments[segments.index("tool") + 1:])


def check_templates(raw: Any, reporter: Reporter, path: str = "",
                    templates: list[tuple[str, str]] | None = None) -> None:
    """Check every template of ``raw``; ``templates``: the (path, text) of each, when the
    parser already listed them (then the document is not walked again)."""
    if templates is not None:
        for where, value in templates:
            _check_one(value, where, reporter, raw)
        return
    # A string's path is built only when it is a template: most strings of a large
    # playbook are not, and joining a path for each was a fifth of this pass.
    stack: list[tuple[Any, str, str | int | None]] = [(raw, path, None)]
    while stack:
        value, parent, key = stack.pop()
        if isinstance(value, str):
            if is_template(value):
                _check_one(value, parent if key is None else paths.join(parent, key), reporter, raw)
            continue
        where = parent if key is None else paths.join(parent, key)
        if isinstance(value, dict):
            stack.extend((v, where, k) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, where, i) for i, v in reversed(list(enumerate(value))))


def _check_one(value: str, where: str, reporter: Reporter, raw: Any) -> None:
    problem = syntax_problem(value)
    if problem:
        reporter.add("NTL701", f"template syntax error: {problem}", where, value=True,
                     fix=_GO_QUOTE_FIX if "{{`" in value else None)
    elif _reads_keychain(value) and not _secrets_allowed(where):
        reporter.add("NTL704", "this template reads `keychain`, which only a task's tool settings "
                               "may do: here it would render as null", where, value=True)
    else:
        _check_operations(value, where, reporter, raw)


def _runs_in_workflow(raw: Any, where: str) -> bool:
    """Whether ``where`` lies in the settings of a tool the workflow runs itself (``noop``,
    ``playbook``): its ``kind`` is read from the tool block on the path."""
    try:
        parts = paths.split(where)
    except ValueError:
        return False
    node = raw
    for index, part in enumerate(parts):
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
        if part == "tool":
            blocks = node if isinstance(node, list) else [node]
            following = parts[index + 1] if index + 1 < len(parts) else None
            if isinstance(node, list) and isinstance(following, int):   # one task of a pipeline
                blocks = node[following:following + 1]
            return any(isinstance(b, dict) and b.get("kind") in IN_WORKFLOW_KINDS for b in blocks)
    return False


def _place(where: str, in_workflow_kind: bool) -> str:
    """What a workflow-side template is, in the user's words."""
    segments = set(_SEGMENT.findall(where))
    if "when" in segments:
        return "a guard (`when`)"
    if segments & {"set", "set_ctx", "set_iter", "set_vars"}:
        return "a `set`"
    if "loop" in segments:
        return "a `loop`"
    if in_workflow_kind:
        return "the settings of a task the workflow runs itself (`noop`, `playbook`)"
    if "args" in segments:
        return "`args`"
    return "a template the workflow renders"


def _check_operations(value: str, where: str, reporter: Reporter, raw: Any) -> None:
    """NTL706: a workflow-side template uses a filter or test that ``template_ops`` keeps to tasks."""
    used = [(kind, name, op) for kind, name in sorted(operations(value))
            if (op := task_only(kind, name)) is not None]
    if not used:
        return
    in_workflow_kind = _runs_in_workflow(raw, where)
    if _secrets_allowed(where) and not in_workflow_kind:
        return   # a task's own settings: rendered by its activity (docs/durability.md, "Task-side renders")
    for kind, name, op in used:
        reporter.add("NTL706", f"`{name}` is not allowed in {_place(where, in_workflow_kind)}: it renders "
                               f"inside the workflow, and this {kind} is task-only ({op.reason})", where,
                     value=True, fix=f"use `{name}` in a task's arguments (a python, shell or http tool's "
                                     "settings render in the task's own activity), and read its result here")
