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


def _dump_value(value, ascii_only):
    try:
        return _dumps(value, default=_default, separators=(",", ":"), ensure_ascii=ascii_only)
    except (TypeError, ValueError, RecursionError):
        return _dumps(_sanitize(value, set()), default=_default, separators=(",", ":"), ensure_ascii=ascii_only)


def _encode_value(value):
    """``value`` as compact UTF-8 JSON, the way the result store writes it."""
    try:
        return _dump_value(value, False).encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
        return _dump_value(value, True).encode()


def _too_large(size, cap):
    return {"ok": False, "kind": "python", "type": "ResultTooLarge", "line": None,
            "message": f"the result is {size:,} bytes of JSON, over the cap of {cap:,} bytes for one "
                       f"task's result (NOETL_MAX_RESULT_BYTES)"}


def _spill(path, body):
    """Write the result's JSON to ``path`` (a new file); whether it was written."""
    import os

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    with os.fdopen(fd, "wb") as out:
        out.write(body)
    return True


def _answer(resp, req):
    """The answer's bytes. A result over ``req["max_result_bytes"]`` is an error with its size;
    one over ``req["spill_over"]`` goes to the file ``req["spill"]``, and the answer names it
    (the worker moves it into the result store without holding it: ``large_results``)."""
    if not resp.get("ok") or (req.get("max_result_bytes") is None and not req.get("spill")):
        return _encode(resp)
    body = _encode_value(resp.get("result"))
    cap = req.get("max_result_bytes")
    if cap is not None and len(body) > cap:
        return _encode(_too_large(len(body), cap))
    if req.get("spill") and len(body) > req.get("spill_over", 0) and _spill(req["spill"], body):
        return _encode({"ok": True, "result_file": req["spill"], "bytes": len(body)})
    return b'{"ok":true,"result":' + body + b"}"
