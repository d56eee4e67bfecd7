"""The execution page's per-step controls (docs/approvals.md, "On the execution page"): for
each running or paused step, the controls its validators would accept now.

Pure HTML from the workflow's answer (``engine/step_offers.py``: ``[{step, iteration, paused,
controls, retrying?}]``): a block per step (per running iteration of a loop) with a reason,
and one form per control: skip (with an optional result as JSON), retry now, change the retry
policy (attempts, delay), pause or resume the step. Every form is drawn, those that do not
apply now hidden, so the page's script (``assets/steps.js``) can show what applies as it
changes: it asks ``steps/controls`` again when the event stream shows a step move, and builds
the block of a step that starts later from the section's ``<template>`` (this module's own
block, so a block has one definition). It posts each control to ``steps/{step}/{control}``
(relative to the page) with the page's token and shows what the API says: the validator's
refusal as written, or the new state. A fast-path task waiting to retry says so
(``engine/progress.py``'s ``retrying_text``: the words of ``status`` and the current details).
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..engine.progress import retrying_text

__all__ = ["step_control_forms"]


def step_control_forms(offers: list[dict[str, Any]]) -> str:
    """The section of a running execution's page: the blocks of the steps that have a
    control to offer now (maybe none yet), and the template of a block for later ones."""
    blocks = "".join(_block(offer) for offer in offers if offer.get("controls"))
    template = _block({"step": "", "controls": []})
    return (f'<section id="step-controls"><h2>step controls</h2>'
            f'<p class="note">what applies now to each running or paused step, kept up to date as steps start, '
            f'fail, retry and end</p>{blocks}'
            f'<template id="step-control-template">{template}</template></section>')


def _block(offer: dict[str, Any]) -> str:
    step = str(offer.get("step"))
    iteration = offer.get("iteration")
    controls = set(offer.get("controls") or ())
    paused = bool(offer.get("paused"))
    where = f" (iteration {int(iteration)})" if isinstance(iteration, int) else ""
    data_iteration = f' data-iteration="{int(iteration)}"' if isinstance(iteration, int) else ""
    state = "paused" if paused else "running"
    retrying = offer.get("retrying")
    note = "retrying: " + retrying_text(retrying) if isinstance(retrying, dict) else ""
    forms = [
        _form("skip", controls, '<label>result (JSON, optional) <input type="text" name="result" '
                                'placeholder=\'{"rows": 0}\'></label> <button type="submit">skip</button>'),
        _form("retry-now", controls, '<button type="submit">retry now</button>'),
        _form("retry-policy", controls,
              '<label>attempts <input type="number" name="attempts" min="1" step="1"></label> '
              '<label>delay (s) <input type="number" name="delay" min="0" step="any"></label> '
              '<button type="submit">change retry policy</button>'),
        _form("pause", controls, '<button type="submit">pause this step</button>'),
        _form("resume", controls, '<button type="submit">resume this step</button>'),
    ]
    return (f'<div class="step-control" data-step="{escape(step)}"{data_iteration} data-state="{state}">'
            f'<p><strong class="control-step">{escape(step)}</strong><span class="control-where">{where}</span>: '
            f'<span class="control-state">{state}</span></p>'
            f'<p class="control-retrying"{"" if note else " hidden"}>{escape(note)}</p>'
            '<label>reason <input type="text" name="reason" class="control-reason"></label>'
            f'{"".join(forms)}<p class="control-status" role="status"></p></div>')


def _form(control: str, offered: set[str], inner: str) -> str:
    return f'<form class="control" data-control="{control}"{"" if control in offered else " hidden"}>{inner}</form>'
