"""``kind: http``: one HTTP request with httpx.

Clients are pooled per event loop (connections are reused across activities; an
``AsyncClient`` is safe for concurrent requests on its own loop but must never be used
from another loop). ``verify`` is a client-level setting in httpx, so it is part of the
pool key; timeouts and redirects are per request.

A non-2xx response is an error outcome that still carries the full result, so a policy
can look at the body (``output.data``) as well as ``output.http.status``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from ..templates.text import text_of
from ..tool_kinds.http import HTTP, TIMEOUT_PHASES
from .base import ToolCall, ToolResult, fail_with, resolve_timeout, scrubber

if TYPE_CHECKING:
    import httpx

# httpx (with its TLS and certificate set-up, ~7 MiB) is imported by the first HTTP task,
# not by the worker: a worker that runs no HTTP task does not carry it.

DEFAULT_TIMEOUT = 30.0
_LIMITS = {"max_connections": 200, "max_keepalive_connections": 50}

# loop -> {verify setting -> client}; weak so a finished loop does not pin its clients
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def get_client(verify: bool | str = True) -> httpx.AsyncClient:
    """The pooled client of the running loop for this ``verify`` setting."""
    import httpx

    loop = asyncio.get_running_loop()
    per_loop = _CLIENTS.setdefault(loop, {})
    client = per_loop.get(verify)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(verify=verify, limits=httpx.Limits(**_LIMITS), trust_env=True)
        per_loop[verify] = client
    return client


async def aclose_clients() -> None:
    """Close the running loop's clients (call on worker shutdown)."""
    loop = asyncio.get_running_loop()
    for client in list(_CLIENTS.pop(loop, {}).values()):
        await client.aclose()
    # Clients of loops that are already closed cannot be awaited any more; drop them.
    for other in [lp for lp in list(_CLIENTS.keys()) if lp.is_closed()]:
        _CLIENTS.pop(other, None)


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off")
    return bool(value)


def _mapping(config: dict, key: str) -> dict:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ToolConfigError(f"http '{key}' must be a mapping, got {type(value).__name__}")
    return value


def _request_kwargs(config: dict, headers: dict[str, str]) -> dict[str, Any]:
    """Body selection: ``json`` > ``payload`` (NoETL: JSON) > ``form`` > ``body``/``data``."""
    if config.get("json") is not None:
        return {"json": config["json"]}
    if config.get("payload") is not None and not isinstance(config["payload"], str):
        return {"json": config["payload"]}
    form = config.get("form")
    if form is not None:
        if not isinstance(form, dict):
            raise ToolConfigError(f"http 'form' must be a mapping of fields, got {type(form).__name__}")
        return {"data": {str(k): _form_value(v) for k, v in form.items() if v is not None}}
    body = next((config[k] for k in ("body", "data", "payload") if config.get(k) is not None), None)
    if body is None:
        return {}
    if isinstance(body, (str, bytes)):
        return {"content": body}
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if isinstance(body, dict) and "json" not in content_type.lower():
        return {"data": {str(k): _form_value(v) for k, v in body.items()}}
    return {"json": body}  # lists, or a dict with a JSON content type


def _form_value(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return "" if v is None else str(v)


def _verify(config: dict) -> bool | str:
    """``verify``/``verify_ssl``: a boolean, or the path of a CA bundle."""
    value = config.get("verify", config.get("verify_ssl"))
    if isinstance(value, str) and value.strip().lower() not in ("true", "false", "1", "0", "yes", "no", ""):
        return value
    return _flag(value, True)


def _url(config: dict) -> httpx.URL:
    import httpx

    raw = config.get("url") or config.get("endpoint")
    if not isinstance(raw, str) or not raw.strip():
        raise ToolConfigError("http task has no url", fix="add 'url: https://...' (or 'endpoint:')")
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolConfigError(f"invalid url {raw!r}: {exc}") from None
    # Merge rather than pass `params=` to httpx, which would drop a query already in the
    # url. None values are dropped (httpx would send "k="); True renders as "true".
    params = {k: v for k, v in _mapping(config, "params").items() if v is not None}
    return url.copy_merge_params(params) if params else url


def _parse_body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    text = response.text
    ctype = response.headers.get("content-type", "").lower()
    looks_json = "json" in ctype or text.lstrip()[:1] in ("{", "[")
    if looks_json:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _safe(url: httpx.URL) -> str:
    """The url for messages and results, without a password (those end up in history)."""
    return str(url.copy_with(username=url.username, password="***")) if url.password else str(url)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status_error(status: int, reason: str, method: str, url: str, body: Any,
                  headers: httpx.Headers, call: ToolCall) -> ToolError:
    snippet = body if isinstance(body, str) else json.dumps(body, default=str)
    snippet = scrubber(call).head(snippet or "", 300, marker="")
    message = f"HTTP {status} {reason} from {method} {url}" + (f": {snippet}" if snippet else "")
    details: dict[str, Any] = {}
    if status == 429:
        kind, retryable = "rate_limit", True
        retry_after = _retry_after(headers.get("retry-after"))
        if retry_after is not None:
            details["retry_after"] = retry_after
    elif status >= 500:
        kind, retryable = "server_error", True
    elif status in (401, 403):
        kind, retryable = "auth", False
    elif status == 404:
        kind, retryable = "not_found", False
    elif status >= 400:
        kind, retryable = "client_error", False
    else:  # 1xx/3xx that were not followed
        kind, retryable = "redirect", False
    return ToolError(message, kind=kind, retryable=retryable, code=status, details=details)


def _timeouts(config: dict, call: ToolCall) -> tuple[float, dict[str, float]]:
    """The attempt's bound and httpx's phase timeouts: ``timeout: {connect, read}`` (NoETL's
    shape) bounds those two phases, the attempt keeps the activity's limit; a number bounds
    every phase and the attempt alike."""
    raw = config.get("timeout")
    if not isinstance(raw, dict):
        return resolve_timeout(config, call, DEFAULT_TIMEOUT), {}
    overall = resolve_timeout({}, call, DEFAULT_TIMEOUT)
    phases: dict[str, float] = {}
    for phase, value in raw.items():
        if phase not in TIMEOUT_PHASES:
            raise ToolConfigError(f"http 'timeout' has no phase {phase!r}",
                                  fix="write `timeout: {connect: <seconds>, read: <seconds>}`")
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = 0.0
        if not seconds > 0:
            raise ToolConfigError(f"http 'timeout.{phase}' must be a number of seconds > 0, got {value!r}")
        phases[phase] = min(seconds, overall)
    return overall, phases


def _phase_text(exc: Exception, phases: dict[str, float], overall: float) -> str:
    """Which bound the request ran into: ``read timeout of 1 s`` (the phase httpx names)."""
    import httpx

    for phase, kind in (("connect", httpx.ConnectTimeout), ("read", httpx.ReadTimeout)):
        if isinstance(exc, kind) and phase in phases:
            return f"after its {phase} timeout of {phases[phase]:g} s"
    return f"after {overall:g} s"


class HttpTool:
    declaration = HTTP  # its settings and traits: tool_kinds/http.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        import httpx

        url = _url(config)
        method = str(config.get("method") or "GET").upper()
        headers = {str(k): text_of(v) for k, v in _mapping(config, "headers").items() if v is not None}
        verify = _verify(config)
        timeout, phases = _timeouts(config, call)
        kwargs = _request_kwargs(config, headers)
        follow = _flag(config.get("follow_redirects"), True)
        client = get_client(verify)
        t0 = time.perf_counter()
        try:
            # httpx's timeout bounds each phase; the outer one bounds the whole exchange
            # (a server trickling bytes would otherwise never time out).
            async with asyncio.timeout(timeout):
                response = await client.request(
                    method, url, headers=headers,
                    timeout=httpx.Timeout(timeout, **phases), follow_redirects=follow, **kwargs,
                )
        except httpx.TimeoutException as exc:
            raise ToolTimeout(f"{method} {_safe(url)} timed out {_phase_text(exc, phases, timeout)}") from None
        except TimeoutError:
            raise ToolTimeout(f"{method} {_safe(url)} timed out after {timeout:g} s") from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise ToolConfigError(f"invalid url '{_safe(url)}': {exc}") from None
        except httpx.TooManyRedirects as exc:
            raise ToolError(f"{method} {_safe(url)}: {exc}", kind="client_error", retryable=False) from None
        except (httpx.TransportError, OSError) as exc:
            text = str(exc) or type(exc).__name__
            raise ToolError(f"{method} {_safe(url)} failed: {text}", kind="connection", retryable=True,
                            code=type(exc).__name__) from None
        elapsed_ms = int((time.perf_counter() - t0) * 1000)

        data = _parse_body(response)
        resp_headers = dict(response.headers)
        result = {
            "status": response.status_code,
            "status_code": response.status_code,
            "headers": resp_headers,
            "data": data,
            "body": data,  # the Rust-runtime dialect reads `.body`
            "url": _safe(response.url),
            "elapsed_ms": elapsed_ms,
        }
        helper = {"status": response.status_code, "headers": resp_headers}
        if not response.is_success:
            err = _status_error(response.status_code, response.reason_phrase, method, _safe(response.url),
                                data, response.headers, call)
            raise fail_with(err, result, http=helper)
        return ToolResult(result, http=helper)
