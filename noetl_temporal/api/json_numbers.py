"""Numbers a JSON request body may not hold: NaN, infinities, and integers too long to read.

Why a check of its own, before any route: JSON has no NaN or infinity, yet Python's parser
reads ``NaN``, ``Infinity`` and an overflowing ``1e999999`` as floats. Nothing downstream can
write them again (the 422 that echoes a field, the event store, Temporal's payloads), so
they surfaced as 500s or as executions whose input could not be encoded. An integer of more
than 4,300 digits makes the parser itself raise (Python's limit on int/str conversion).
Checking the raw body once, for every route, keeps each route's model free of the question.

Why the parsed body is handed on (:data:`PARSED`, :class:`ParsedBodyRoute`): the check
parses the whole body, and FastAPI parsed it once more for the route. The value the check
parsed is the one ``json.loads`` gives (its hooks return the same numbers, and a body with a
number they refuse never reaches a route), so the route reads it instead: a body is parsed once.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

__all__ = ["refusal", "parse", "parsed", "is_json_body", "PARSED", "ParsedBodyRoute"]

#: the scope key under which the body's parsed JSON is handed to the route
PARSED = "noetl.parsed_json"

#: the longest integer literal Python converts (``sys.get_int_max_str_digits``; 0 means no limit)
_MAX_DIGITS = sys.get_int_max_str_digits() or 4300


class _Bad:
    """Stands where a number that cannot be carried was, so the walk can name its place."""

    def __init__(self, text: str) -> None:
        self.text = text


def _constant(text: str) -> _Bad:  # NaN, Infinity, -Infinity
    return _Bad(text)


def _float(text: str) -> float | _Bad:
    value = float(text)
    return value if math.isfinite(value) else _Bad(text)


def _int(text: str) -> int | _Bad:
    return int(text) if len(text.lstrip("-")) <= _MAX_DIGITS else _Bad(f"an integer of {len(text)} digits")


def is_json_body(content_type: bytes | None) -> bool:
    """What FastAPI would parse as JSON (no content type, ``application/json``, ``+json``)."""
    if not content_type:
        return True
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def refusal(body: bytes) -> str | None:
    """Why ``body`` is refused (the first number it cannot carry, and where), or None.

    A body that is not JSON at all is left to the route's own 422 (None here)."""
    return parse(body)[0]


def parse(body: bytes) -> tuple[str | None, Any]:
    """(why ``body`` is refused or None, its parsed value or ``_UNPARSED``): one parse for both."""
    try:
        value = json.loads(body, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except (ValueError, RecursionError):
        return None, _UNPARSED
    found = _first_bad(value)
    if found is None:
        return None, value
    where, bad = found
    return (f"the request body holds {bad.text[:40]} at {where}, a number this API cannot carry "
            "(JSON has no NaN or infinity; 1e999 and beyond overflow to infinity; integers stop at "
            f"{_MAX_DIGITS} digits): send a finite number, or the value as a string"), _UNPARSED


#: ``parse``'s value for a body that is not JSON (the route parses it, and answers its 422)
_UNPARSED = object()


def parsed(value: Any) -> bool:
    return value is not _UNPARSED


class _ParsedBodyRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            value = self.scope.get(PARSED, _UNPARSED)
            self._json = value if value is not _UNPARSED else await super().json()
        return self._json


class ParsedBodyRoute(APIRoute):
    """A route that reads the JSON body the body-limit middleware already parsed."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(_ParsedBodyRequest(request.scope, request.receive))

        return route


def _first_bad(value: Any) -> tuple[str, _Bad] | None:
    stack: list[tuple[str, Any]] = [("body", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, _Bad):
            return where, item
        if isinstance(item, dict):
            stack.extend((f"{where}.{key}", child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None
