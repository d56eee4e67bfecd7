"""A message on one line, for progress output: an HTTP error whose body is an HTML page
(a proxy's 502, a framework's debug page) must not print the page into a terminal.

Markup is dropped (scripts and styles with their content), whitespace collapsed, and the
text cut at ``limit`` characters; the whole message stays in the events (``events``, the API).
"""

from __future__ import annotations

import re

__all__ = ["one_line"]

_BLOCKS = re.compile(r"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_TAGS = re.compile(r"<!--.*?-->|<![^>]*>|</?[A-Za-z][^<>]*>", re.S)
_SPACE = re.compile(r"\s+")


def one_line(text: str | None, limit: int = 160) -> str:
    """``text`` without markup or line breaks, at most ``limit`` characters (cut with "…")."""
    if not text:
        return ""
    if "<" in text and ">" in text:
        text = _TAGS.sub(" ", _BLOCKS.sub(" ", text))
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
