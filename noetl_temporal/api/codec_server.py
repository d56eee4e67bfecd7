"""A codec server: Temporal's remote codec protocol over the deployment's own codec.

With a payload codec of yours on (one that encrypts), history holds ciphertext, so the
Temporal UI and ``temporal workflow show`` show ciphertext. Temporal's answer is a codec
server they call over HTTP (docs/deployment.md, "A readable UI: the codec server"):

* ``POST .../encode`` and ``POST .../decode``, body and answer ``{"payloads": [...]}``: each
  payload in protobuf's JSON form (``metadata`` values and ``data`` base64). Only the last
  segment of the path counts, so the endpoint may be mounted anywhere
  (``http://host:port/{namespace}`` for the CLI's templating works too).
* The namespace: the ``X-Namespace`` header the UI and the CLI send (else the segment
  before ``/encode``/``/decode``). With ``namespaces`` set, any other namespace is refused
  (403): one server per namespace's keys.
* CORS for the UI's origins: a browser's preflight (``OPTIONS``, with the ``Content-Type``,
  ``X-Namespace`` and ``Authorization`` headers the UI sends, credentials included when
  the UI's "include cross-origin credentials" is on) is answered for the listed origins only;
  any other origin gets no CORS headers, so a page elsewhere cannot have a browser decrypt.

The codec is the workers' (``converter.data_converter``): your codec with the claim check
layered over it, so a large payload's reference in history (``claimcheck.py``) is read from
the payload store and decrypted, and the UI shows the value itself. Decoding leaves a
payload it cannot decode as it was (the UI then shows it as without the server) and logs
why; one unreadable payload does not hide the rest of a history.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

__all__ = ["codec_app", "MAX_BODY_BYTES", "DEFAULT_UI_ORIGINS", "UI_HEADERS"]

log = logging.getLogger("noetl_temporal.codec_server")

#: what one request may carry: Temporal's 2 MB payload limit times a page of events
MAX_BODY_BYTES = 64 * 1024 * 1024
#: the local dev server's UI (``temporal server start-dev``, ``noetl-temporal dev``)
DEFAULT_UI_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
#: the request headers the UI and the CLI send a codec server
UI_HEADERS = ("Content-Type", "X-Namespace", "Authorization")
_OPERATIONS = ("encode", "decode")


def _error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": message}, status_code=status)


def payloads_of(body: bytes) -> list[Payload]:
    """The payloads of a request body (protobuf JSON); ``ValueError`` saying what is wrong."""
    import json

    try:
        value = json.loads(body)
    except ValueError as exc:
        raise ValueError(f"the body is not JSON: {exc}") from None
    if not isinstance(value, dict) or not isinstance(value.get("payloads", []), list):
        raise ValueError('the body must be {"payloads": [...]}')
    try:
        return list(json_format.ParseDict(value, Payloads(), ignore_unknown_fields=True).payloads)
    except json_format.ParseError as exc:
        raise ValueError(f"not Temporal payloads in protobuf JSON (metadata and data base64): {exc}") from None


def json_of(payloads: Sequence[Payload]) -> dict[str, Any]:
    return json_format.MessageToDict(Payloads(payloads=payloads))


async def _decode_each(codec: PayloadCodec, payloads: list[Payload]) -> list[Payload]:
    """All at once; if that fails, one by one, keeping any that cannot be decoded as they are."""
    try:
        return list(await codec.decode(payloads))
    except Exception as exc:  # noqa: BLE001 - a user's codec may raise anything
        if len(payloads) == 1:
            log.warning("codec server: a payload could not be decoded and is returned as it was: %s", exc)
            return payloads
    out: list[Payload] = []
    for payload in payloads:
        out.extend(await _decode_each(codec, [payload]))
    return out


def codec_app(codec: PayloadCodec, *, cors_origins: Iterable[str] = DEFAULT_UI_ORIGINS,
              namespaces: Iterable[str] = ()) -> Any:
    """The ASGI app of a codec server over ``codec`` (a ``PayloadCodec``: for the workers'
    own, ``data_converter(your_codec).payload_codec``).

    ``cors_origins``: the origins of the UIs allowed to call it from a browser (``*``: any,
    without credentials); ``namespaces``: the only namespaces it serves (empty: any)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    allowed = frozenset(namespaces)
    origins = list(dict.fromkeys(cors_origins))

    async def serve(request: Request) -> Any:
        path = request.url.path.rstrip("/")
        operation = path.rsplit("/", 1)[-1]
        if operation not in _OPERATIONS:
            return _error(404, f"no such endpoint {request.url.path!r}: a codec server answers "
                               "POST .../encode and POST .../decode")
        if request.method != "POST":
            return _error(405, f"{operation} takes POST")
        segments = [s for s in path.split("/") if s]
        namespace = request.headers.get("x-namespace") or (segments[-2] if len(segments) > 1 else "")
        if allowed and namespace not in allowed:
            return _error(403, f"this codec server serves the namespace(s) {', '.join(sorted(allowed))}, "
                               f"not {namespace or '(none given)'!r}: send X-Namespace")
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
            return _error(413, f"the body is over {MAX_BODY_BYTES} bytes")
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return _error(413, f"the body is over {MAX_BODY_BYTES} bytes")
        try:
            payloads = payloads_of(body)
        except ValueError as exc:
            return _error(400, str(exc))
        if operation == "decode":
            result = await _decode_each(codec, payloads)
        else:
            try:
                result = list(await codec.encode(payloads))
            except Exception as exc:  # noqa: BLE001 - the user's codec: say it, do not crash
                log.warning("codec server: encoding failed: %s", exc)
                return _error(500, f"the codec could not encode: {type(exc).__name__}: {exc}")
        return JSONResponse(json_of(result))

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
    routes = [Route("/{path:path}", serve, methods=methods)]
    wildcard = "*" in origins
    middleware = [Middleware(CORSMiddleware, allow_origins=origins, allow_methods=["POST"],
                             allow_headers=list(UI_HEADERS), allow_credentials=not wildcard, max_age=600)]
    return Starlette(routes=routes, middleware=middleware)
