"""The one answer a runner writes: JSON, whatever the user code returned.

``json`` is imported lazily (a spawned runner pays every import) and its ``dumps`` kept
(:func:`_use_json`): user code may replace ``json.dumps``, and the answer must still be JSON.
A value JSON cannot hold is converted (:func:`_default`); a structure it cannot encode at
all (a cycle, a key of another type) is made encodable first (:func:`_sanitize`).
"""

# Not `from typing import TYPE_CHECKING`: the runner imports as little as it can before the
# user code runs (mypy treats any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import json  # noqa: F401 - bound by _use_json; process and startup read answer.json
    from collections.abc import Callable

# Bound by _use_json (json is imported lazily, and user code may replace json.dumps).
_dumps: "Callable[..., str]"


def _use_json():
    """Import json and keep its ``dumps``: user code may replace ``json.dumps``, and the
    answer must still be JSON."""
    global json, _dumps
    import json  # noqa: F401 - bound by _use_json; process and startup read answer.json

    _dumps = json.dumps


def _default(o):
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).decode("utf-8", "replace")
    return str(o)


def _sanitize(x, seen):
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if id(x) in seen:
        return "<cycle>"
    if isinstance(x, dict):
        seen.add(id(x))
        out = {k if isinstance(k, str) else str(k): _sanitize(v, seen) for k, v in x.items()}
        seen.discard(id(x))
        return out
    if isinstance(x, (list, tuple, set, frozenset)):
        seen.add(id(x))
        items = [_sanitize(v, seen) for v in x]
        seen.discard(id(x))
        return items
    return _sanitize(_default(x), seen)


def _encode(resp):
    try:
        return _dumps(resp, default=_default).encode()
    except (TypeError, ValueError, RecursionError):
        return _dumps(_sanitize(resp, set()), default=_default).encode()
