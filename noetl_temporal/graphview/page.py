"""The execution page: the server-drawn SVG plus a small script that follows the event stream.

Everything is inline (CSS, script, SVG), so the page works offline and behind any proxy:
no CDN, no extra routes. The server draws the state it knows (:func:`.states.first_paint`);
the script goes on from the event after the last one drawn, with rules that come in a
JSON block built from :mod:`.states`, so what a state means is defined once, in Python.
A finished execution's page opens no stream: its first paint is final.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from html import escape
from importlib.resources import files
from urllib.parse import quote, urlencode

from .approval_form import approval_forms
from .model import GraphView
from .states import PICTURE, STATE_WORDS, STEP_EVENTS, STOPPING, WATCHED_TYPES, Painted
from .step_offers import step_control_forms
from .svg import render_svg

__all__ = ["execution_page", "stream_url", "MAX_DRAWN_STEPS"]

# Past this many steps the page shows an overview instead of one box per step: a
# 10,000-step drawing is megabytes of SVG, seconds of layout, and unreadable anyway.
MAX_DRAWN_STEPS = 500
# Steps the overview names per list (running, failed); the rest are counted.
LISTED_STEPS = 20


@cache
def _asset(name: str) -> str:
    return files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def stream_url(execution_id: str, access_token: str | None = None, after_seq: int = 0) -> str:
    """The SSE URL the page follows, relative to the page (``/executions/{id}/view``)."""
    params = [("type", t) for t in WATCHED_TYPES]
    if after_seq:
        params.append(("after_seq", str(after_seq)))
    if access_token:
        params.append(("access_token", access_token))  # EventSource cannot send headers (RFC 6750 §2.3)
    return f"events/stream?{urlencode(params)}"


def _json_for_script(value: object) -> str:
    # "</" would end the <script> block early; "<\/" is the same string to JSON.
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def execution_page(view: GraphView, execution_id: str, *, state: str = "RUNNING", source: str | None = None,
                   access_token: str | None = None, painted: Painted | None = None, event_count: int = 0,
                   finished: bool = False, waiting: list[dict[str, object]] | None = None,
                   controls: str = "", scripts: tuple[str, ...] = (),
                   step_offers: list[dict[str, object]] | None = None) -> str:
    """The page; ``painted``: the steps' states the server knows, ``event_count``: the
    execution's (the API's ``event_count``), ``finished``: draw it final, follow nothing;
    ``waiting``: approvals waiting for an answer (the status's list), one form each;
    ``controls``: HTML for the header (``.redrive``), ``scripts``: the assets that drive it,
    run after ``live.js``; ``step_offers``: the per-step controls that apply now (the
    workflow's ``step_controls`` query), a block of forms per running or paused step, which
    the page keeps up to date (``steps.js``, ``GET steps/controls``); None: no such section."""
    painted = painted or Painted()
    config = {"execution_id": execution_id, "stream": None if finished else stream_url(
                  execution_id, access_token, painted.last_seq),
              "events": [list(row) for row in STEP_EVENTS], "picture": PICTURE, "words": STATE_WORDS,
              "stopping": STOPPING, "types": list(WATCHED_TYPES), "event_count": event_count,
              # the stream starts after the last event drawn: the script counts on from there
              "after_seq": painted.last_seq, "loops": {name: list(dt) for name, dt in painted.loops.items()}}
    if len(view.nodes) > MAX_DRAWN_STEPS:
        # the overview's counts start from what the server knows, as the boxes do
        config.update(steps=[node.name for node in view.nodes], listed=LISTED_STEPS, painted=painted.states)
        picture = _overview(view, painted)
    else:
        picture = render_svg(view, painted)
    forms = approval_forms(list(waiting or ()))
    if forms:
        scripts = (*scripts, "approve.js")
    if forms:
        config["access_token"] = access_token   # the forms post with it (as the stream reads with it)
    # None: the caller offers no controls; a list (maybe empty): the section, kept up to date
    step_forms = "" if finished or step_offers is None else step_control_forms(list(step_offers))
    if step_forms:
        scripts = (*scripts, "steps.js")   # it reads the token from the page's address, as redrive.js does
    legend = "".join(f'<span class="{escape(state)}">{escape(word)}</span>'
                     for state, word in STATE_WORDS.items())
    origin = f" · {escape(source)}" if source else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{escape(view.name)} · {escape(execution_id)}</title>
<style>{_asset("page.css")}</style></head>
<body data-stream="{'ended' if finished else 'connecting'}">
<header><h1>{escape(view.name)}</h1>
<p>execution <code>{escape(execution_id)}</code>{origin} · state: <span id="execution-state" data-state="{escape(state)}">{escape(state)}</span>
 · events: <span id="event-count">{event_count}</span> · <a href="../{quote(execution_id, safe='')}">detail (JSON)</a>
 <span id="stream-error"></span></p>
{controls}
<p class="legend">{legend}</p></header>
<main>{picture}</main>{forms}{step_forms}
<script type="application/json" id="noetl-config">{_json_for_script(config)}</script>
<script>{_asset("live.js")}</script>
{"".join(f"<script>{_asset(name)}</script>" for name in scripts)}
</body></html>
"""


def _overview(view: GraphView, painted: Painted) -> str:
    """How many steps are in each state, and which run or failed: as the server knows them
    on first paint, kept up to date by the script."""
    states = [painted.states.get(node.name, "idle") for node in view.nodes]
    counts = Counter(states)
    rows = "".join(f'<tr class="{escape(state)}"><td>{escape(word)}</td>'
                   f'<td class="count" data-state="{escape(state)}">{counts.get(state, 0)}</td></tr>'
                   for state, word in STATE_WORDS.items())

    def listed(wanted: str) -> str:
        names = [node.name for node, state in zip(view.nodes, states, strict=True) if state == wanted]
        shown = ", ".join(names[:LISTED_STEPS])
        more = f" and {len(names) - LISTED_STEPS} more" if len(names) > LISTED_STEPS else ""
        return escape(shown + more) if names else "none"

    return f"""<section id="overview">
<p>{len(view.nodes):,} steps: more than {MAX_DRAWN_STEPS} are counted by state instead of drawn
(<code>noetl-temporal graph</code> prints the whole graph as Mermaid).</p>
<table class="counts"><thead><tr><th>state</th><th>steps</th></tr></thead><tbody>{rows}</tbody></table>
<h2>running</h2><p id="list-running" class="steps">{listed("running")}</p>
<h2>failed</h2><p id="list-failed" class="steps">{listed("failed")}</p>
</section>"""
