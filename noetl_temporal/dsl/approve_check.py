"""``kind: approve`` tasks: their form, who may answer and what a timeout does (NTL214-NTL218).

The rules are the kind's own (``tool_kinds/approve.py``), the same the engine applies to
the rendered task and the ``answer`` update to a person's answer; here they are applied to
what the playbook writes literally (a template is checked when it is rendered).
"""

from __future__ import annotations

from typing import Any

from ..templates import is_template
from ..tool_kinds.approve import APPROVE, answer_problem, field_problems, parse_fields
from . import paths
from .diagnostics import Reporter
from .models import Playbook

__all__ = ["check_approvals"]


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values()) or any(_has_template(k) for k in value)
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def check_approvals(playbook: Playbook, reporter: Reporter) -> None:
    for index, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            if task.kind == APPROVE.kind:
                _check(task.config, f"workflow[{index}].tool[{j}]", reporter)


def _check(config: dict[str, Any], path: str, reporter: Reporter) -> None:
    fields = config.get("fields")
    form_ok = True
    if fields is not None and not _has_template(fields):
        for name, message, fix in field_problems(fields):
            form_ok = False
            where = f"{path}.fields"
            if name and isinstance(fields, dict):
                where = paths.join(where, name)
            elif name and isinstance(fields, list):   # the list entry that names it
                index = next(i for i, f in enumerate(fields) if isinstance(f, dict) and f.get("name") == name)
                where = f"{where}[{index}]"
            code = "NTL215" if message.startswith("name:") else "NTL214"
            reporter.add_normalized(code, message.removeprefix("name: "), where, fix=fix)
    else:
        form_ok = fields is None
    approvers = config.get("approvers")
    if isinstance(approvers, list) and not _has_template(approvers):
        bad = [a for a in approvers if not isinstance(a, str) or not a.strip()]
        if bad:
            reporter.add_normalized("NTL218", f"`approvers` holds {bad[0]!r}, which is not a name",
                                    f"{path}.approvers", fix="list the names that may answer: `approvers: [ops, alice]`")
    on_timeout, default, timeout = config.get("on_timeout"), config.get("default"), config.get("timeout")
    if timeout is None and (on_timeout is not None or default is not None):
        key = "on_timeout" if on_timeout is not None else "default"
        reporter.add_normalized("NTL217", f"`{key}` has no effect: the task has no `timeout`, so it waits until "
                                          "answered", f"{path}.{key}",
                                fix="add `timeout:` (seconds), or drop `on_timeout`/`default`")
    if on_timeout == "answer" and default is None:
        reporter.add_normalized("NTL216", "`on_timeout: answer` has no `default` answer to take", f"{path}.on_timeout",
                                fix="add `default: {...}` with the answer a timeout gives, or use `on_timeout: fail`")
    elif default is not None and on_timeout != "answer" and not _has_template(on_timeout):
        reporter.add_normalized("NTL216", "`default` is never used: a timeout fails the task unless "
                                          "`on_timeout: answer`", f"{path}.default",
                                fix="add `on_timeout: answer`, or drop `default`")
    elif default is not None and form_ok and not _has_template(default):
        problem = answer_problem(parse_fields(fields), default)
        if problem is not None:
            reporter.add_normalized("NTL216", f"`default` is not an answer the form accepts: {problem}",
                                    f"{path}.default", fix="give `default:` a value for each required field, "
                                                           "of the field's type")
