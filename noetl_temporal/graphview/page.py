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

__all__ = ["execution_page", "stream_url"]


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
    config = {"execution_id": execution_id, "stream": stream_url(execution_id, access_token),
              "states": [list(row) for row in STEP_STATES], "words": STATE_WORDS, "types": list(WATCHED_TYPES)}
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
<main>{render_svg(view)}</main>
<script type="application/json" id="noetl-config">{_json_for_script(config)}</script>
<script>{_asset("live.js")}</script>
</body></html>
"""
