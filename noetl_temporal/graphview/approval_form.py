"""The execution page's answer forms: one per ``kind: approve`` task waiting (docs/approvals.md).

Pure HTML from what the status says waits (its ``waiting`` list): the prompt, one input per
field of the form (a select for booleans and choices, a number input for numbers), and who
may answer. ``assets/approve.js`` posts the answer to ``steps/{step}/answer`` (relative to
the page) and shows what the API says: the validator's refusal as written, or who answered.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["approval_forms"]


def approval_forms(waiting: list[dict[str, Any]]) -> str:
    """The forms section, or '' when nothing waits."""
    if not waiting:
        return ""
    forms = "".join(_form(ask) for ask in waiting)
    return f'<section id="approvals"><h2>waiting for an answer</h2>{forms}</section>'


def _form(ask: dict[str, Any]) -> str:
    step = str(ask.get("step"))
    iteration = ask.get("iteration")
    who = ", ".join(str(a) for a in ask.get("approvers") or ()) or "anyone who may control the execution"
    timeout = f" · times out after {ask['timeout']} s ({escape(str(ask.get('on_timeout')))})" \
        if ask.get("timeout") else ""
    fields = "".join(_field(str(spec.get("name")), spec) for spec in ask.get("fields") or ())
    data_iteration = f' data-iteration="{int(iteration)}"' if isinstance(iteration, int) else ""
    return (f'<form class="approval" data-step="{escape(step)}"{data_iteration}>'
            f'<p class="prompt"><strong>{escape(step)}</strong>: {escape(str(ask.get("prompt") or ""))}</p>'
            f'<p class="who">may answer: {escape(who)}{timeout}</p>{fields}'
            '<label>reason <input type="text" name="__reason" data-type="reason"></label>'
            '<button type="submit">answer</button> <span class="answer-status" role="status"></span></form>')


def _field(name: str, spec: dict[str, Any]) -> str:
    kind = str(spec.get("type") or "string")
    required = bool(spec.get("required"))
    choices = list(spec.get("choices") or ())
    if kind == "boolean" and not choices:
        choices = [True, False]
    mark = " *" if required else ""
    doc = f' <small>{escape(str(spec["doc"]))}</small>' if spec.get("doc") else ""
    attrs = f'name="{escape(name)}" data-type="{escape(kind)}"' + (" required" if required else "")
    if choices:
        empty = "" if required else '<option value="">(no answer)</option>'
        options = "".join(f'<option value="{escape(_text(c))}">{escape(_text(c))}</option>' for c in choices)
        control = f'<select {attrs}>{empty}{options}</select>'
    elif kind in ("integer", "number"):
        step = "1" if kind == "integer" else "any"
        control = f'<input type="number" step="{step}" {attrs}>'
    else:
        control = f'<input type="text" {attrs}>'
    return f'<label>{escape(name)}{mark} {control}{doc}</label>'


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
