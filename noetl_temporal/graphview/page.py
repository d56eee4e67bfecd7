"""The execution page: the server-drawn SVG plus a small script that follows the event stream.

Everything is inline (CSS, script, SVG), so the page works offline and behind any proxy:
no CDN, no extra routes. The script's rules come in a JSON block built from
:mod:`.states`, so what a state means is defined once, in Python.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape
from importlib.resources import files
from urllib.parse import quote, urlencode

from .model import GraphView
from .states import STATE_WORDS, STEP_STATES, WATCHED_TYPES
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


def stream_url(execution_id: str, access_token: str | None = None) -> str:
    """The SSE URL the page follows, relative to the page (``/executions/{id}/view``)."""
    params = [("type", t) for t in WATCHED_TYPES]
    if access_token:
        params.append(("access_token", access_token))  # EventSource cannot send headers (RFC 6750 §2.3)
    return f"events/stream?{urlencode(params)}"


def _json_for_script(value: object) -> str:
    # "</" would end the <script> block early; "<\/" is the same string to JSON.
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def execution_page(view: GraphView, execution_id: str, *, state: str = "RUNNING", source: str | None = None,
                   access_token: str | None = None) -> str:
    config: dict[str, object] = {
        "execution_id": execution_id, "stream": stream_url(execution_id, access_token),
        "states": [list(row) for row in STEP_STATES], "words": STATE_WORDS, "types": list(WATCHED_TYPES)}
    if len(view.nodes) > MAX_DRAWN_STEPS:
        config.update(steps=[node.name for node in view.nodes], listed=LISTED_STEPS)
        picture = _overview(view)
    else:
        picture = render_svg(view)
    legend = "".join(f'<span class="{escape(state)}">{escape(word)}</span>'
                     for state, word in STATE_WORDS.items())
    origin = f" · {escape(source)}" if source else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{escape(view.name)} · {escape(execution_id)}</title>
<style>{_asset("page.css")}</style></head>
<body data-stream="connecting">
<header><h1>{escape(view.name)}</h1>
<p>execution <code>{escape(execution_id)}</code>{origin} · state: <span id="execution-state" data-state="{escape(state)}">{escape(state)}</span>
 · events: <span id="event-count">0</span> · <a href="../{quote(execution_id, safe='')}">detail (JSON)</a>
 <span id="stream-error"></span></p>
<p class="legend">{legend}</p></header>
<main>{picture}</main>
<script type="application/json" id="noetl-config">{_json_for_script(config)}</script>
<script>{_asset("live.js")}</script>
</body></html>
"""


def _overview(view: GraphView) -> str:
    """How many steps are in each state, and which run or failed (filled by the script)."""
    rows = "".join(f'<tr class="{escape(state)}"><td>{escape(word)}</td>'
                   f'<td class="count" data-state="{escape(state)}">{len(view.nodes) if state == "idle" else 0}</td></tr>'
                   for state, word in STATE_WORDS.items())
    return f"""<section id="overview">
<p>{len(view.nodes):,} steps: more than {MAX_DRAWN_STEPS} are counted by state instead of drawn
(<code>noetl-temporal graph</code> prints the whole graph as Mermaid).</p>
<table class="counts"><thead><tr><th>state</th><th>steps</th></tr></thead><tbody>{rows}</tbody></table>
<h2>running</h2><p id="list-running" class="steps">none</p>
<h2>failed</h2><p id="list-failed" class="steps">none</p>
</section>"""
