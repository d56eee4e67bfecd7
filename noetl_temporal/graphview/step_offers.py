"""The execution page's per-step controls (docs/approvals.md, "On the execution page"): for
each running or paused step, the controls its validators would accept now.

Pure HTML from the workflow's answer (``engine/step_offers.py``: ``[{step, iteration, paused,
controls}]``): a block per step (per running iteration of a loop) with a reason, and one form
per control that applies: skip (with an optional result as JSON), retry now, change the retry
policy (attempts, delay), pause or resume the step. Pause and resume are both drawn, the one
that does not apply hidden, so the page can flip them after an answer. ``assets/steps.js``
posts each to ``steps/{step}/{control}`` (relative to the page) with the page's token and shows
what the API says: the validator's refusal as written, or the new state.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["step_control_forms"]


def step_control_forms(offers: list[dict[str, Any]]) -> str:
    """The section, or '' when no step has a control to offer."""
    blocks = "".join(_block(offer) for offer in offers if offer.get("controls"))
    if not blocks:
        return ""
    return (f'<section id="step-controls"><h2>step controls</h2>'
            f'<p class="note">what applies now to each running or paused step; reload to see steps that '
            f'started since</p>{blocks}</section>')


def _block(offer: dict[str, Any]) -> str:
    step = str(offer.get("step"))
    iteration = offer.get("iteration")
    controls = set(offer.get("controls") or ())
    paused = bool(offer.get("paused"))
    where = f" (iteration {int(iteration)})" if isinstance(iteration, int) else ""
    data_iteration = f' data-iteration="{int(iteration)}"' if isinstance(iteration, int) else ""
    state = "paused" if paused else "running"
    forms = []
    if "skip" in controls:
        forms.append('<form class="control" data-control="skip">'
                      '<label>result (JSON, optional) <input type="text" name="result" placeholder=\'{"rows": 0}\'>'
                      '</label> <button type="submit">skip</button></form>')
    if "retry-now" in controls:
        forms.append('<form class="control" data-control="retry-now"><button type="submit">retry now</button></form>')
    if "retry-policy" in controls:
        forms.append('<form class="control" data-control="retry-policy">'
                     '<label>attempts <input type="number" name="attempts" min="1" step="1"></label> '
                     '<label>delay (s) <input type="number" name="delay" min="0" step="any"></label> '
                     '<button type="submit">change retry policy</button></form>')
    if controls & {"pause", "resume"}:
        forms.append(_hold_form("pause", hidden="pause" not in controls))
        forms.append(_hold_form("resume", hidden="resume" not in controls))
    return (f'<div class="step-control" data-step="{escape(step)}"{data_iteration} data-state="{state}">'
            f'<p><strong>{escape(step)}</strong>{where}: <span class="control-state">{state}</span></p>'
            '<label>reason <input type="text" name="reason" class="control-reason"></label>'
            f'{"".join(forms)}<p class="control-status" role="status"></p></div>')


def _hold_form(control: str, *, hidden: bool) -> str:
    words = "pause this step" if control == "pause" else "resume this step"
    return (f'<form class="control" data-control="{control}"{" hidden" if hidden else ""}>'
            f'<button type="submit">{words}</button></form>')
