"""``kind: nats`` and ``kind: subscription``: NATS with nats-py (asyncio).

Connection: ``auth: <name>`` names a keychain entry (resolved by the activity into
``call.keychain``) holding ``url`` (or ``nats_url``, ``server``, ``servers``) and optionally
``user``/``username``, ``password`` or ``token``, as NoETL's credential does; ``auth`` may be
a mapping of those fields, and ``url`` may be written on the task (a server address is not a
secret; ``user``, ``password`` and ``token`` only come from keychain templates). One
connection per task, closed at its end; it never reconnects (a lost server fails the attempt,
retryably, and the task's retry policy decides).

Operations and result shapes are NoETL's (``status: success`` inside the result, as its
playbooks read it), plus core ``publish`` and ``request``. ``js_consume`` and
``subscription`` are one bounded drain: at most ``batch`` messages (<= 1000), ``max_bytes``
of payload and ``timeout_ms`` (<= 5000) of waiting, from a durable pull consumer that must
exist; they return what arrived, an empty list included. Payloads: a mapping or list is sent
as JSON, text as UTF-8; a received payload that parses as JSON is returned parsed, else as
text. Errors: kind ``nats``, ``code`` = the nats-py exception class; a server that cannot be
reached, a timeout and no responders are retryable.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from ..tool_kinds.nats import NATS
from ..tool_kinds.subscription import SUBSCRIPTION, UNAVAILABLE_SOURCES
from .base import ToolCall, resolve_timeout

DEFAULT_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT_MS = 5_000
#: the bounded drain's limits, NoETL's (a task must not hold a worker slot waiting)
BATCH_DEFAULT, BATCH_MAX = 100, 1000
DRAIN_TIMEOUT_DEFAULT_MS, DRAIN_TIMEOUT_MAX_MS = 1_000, 5_000
#: the largest object ``object_get`` reads into a result (the activity stores a large result
#: by reference, but the worker holds it whole first)
OBJECT_MAX_BYTES = 64 * 1024 * 1024
_URL_KEYS = ("url", "nats_url", "server", "servers")
_RETRYABLE = frozenset({"NoServersError", "TimeoutError", "NoRespondersError", "ConnectionClosedError",
                        "StaleConnectionError", "OutboundBufferLimitError", "ServiceUnavailableError"})


# ------------------------------------------------------------------ connection and payloads


def _first(entry: dict[str, Any], *keys: str) -> Any:
    return next((entry[k] for k in keys if entry.get(k) not in (None, "")), None)


def connection(config: dict, call: ToolCall, kind: str = "nats") -> dict[str, Any]:
    """``{servers, user, password, token}`` from ``auth`` / ``url`` / the keychain templates."""
    auth = config.get("auth")
    entry: dict[str, Any] = {}
    if isinstance(auth, str) and auth.strip():
        name = auth.strip()
        if name not in call.keychain:
            raise ToolConfigError(f"{kind} auth {name!r} is not a resolved keychain entry",
                                  fix=f"declare '{name}' under the playbook's keychain: and provide it, with "
                                      "`url: nats://host:4222` (see docs/keychain.md)")
        entry = dict(call.keychain[name])
    elif isinstance(auth, dict):
        entry = dict(auth)
    elif auth is not None:
        raise ToolConfigError(f"{kind} 'auth' must name a keychain entry, got {type(auth).__name__}")
    for key in (*_URL_KEYS, "user", "username", "password", "token"):
        if config.get(key) not in (None, ""):
            entry[key] = config[key]
    servers = _first(entry, *_URL_KEYS)
    if servers is None:
        raise ToolConfigError(f"{kind} task has no server",
                              fix="write `url: nats://host:4222`, or `auth: <keychain entry>` with a `url` field")
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    return {"servers": list(servers), "user": _first(entry, "user", "username"),
            "password": _first(entry, "password"), "token": _first(entry, "token")}


async def _connect(params: dict[str, Any], timeout: float) -> Any:
    try:
        import nats
    except ImportError:
        raise ToolError("the nats tool needs nats-py, which this worker does not have", kind="nats",
                        code="ImportError", fix="install it on the worker: pip install 'noetl-temporal[nats]'") from None

    errors: list[BaseException] = []

    async def keep(exc: Exception) -> None:  # nats-py logs every failed attempt otherwise
        errors.append(exc)

    budget = min(CONNECT_TIMEOUT, timeout)
    kwargs: dict[str, Any] = {"servers": params["servers"], "connect_timeout": budget,
                              "allow_reconnect": False, "max_reconnect_attempts": 0, "error_cb": keep,
                              "reconnect_time_wait": 0.5}
    if params["token"]:
        kwargs["token"] = str(params["token"])
    elif params["user"]:
        kwargs["user"], kwargs["password"] = str(params["user"]), str(params["password"] or "")
    where = ", ".join(params["servers"])
    try:
        # nats-py retries a first connection that is refused without end: the budget bounds it
        return await asyncio.wait_for(nats.connect(**kwargs), budget)
    except TimeoutError:
        last = errors[-1] if errors else None
        raise ToolError(f"nats: cannot connect to {where} within {budget:g}s"
                        + (f": {type(last).__name__}: {last}" if last else ""), kind="nats",
                        code="NoServersError", retryable=True,
                        fix="check that the server runs and the keychain entry's `url`") from None
    except Exception as exc:  # noqa: BLE001 - every connect failure becomes one located error
        raise _error(exc, f"cannot connect to {where}") from None


def encode(value: Any) -> bytes:
    """A payload as NoETL sends it: JSON for a mapping or list, UTF-8 text otherwise."""
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    return str(value).encode()


def decode(data: bytes | None) -> Any:
    """A payload as NoETL returns it: parsed JSON when it is JSON, else the text."""
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _headers(value: Any) -> dict[str, str] | None:
    if value in (None, {}):
        return None
    if not isinstance(value, dict):
        raise ToolConfigError(f"nats 'headers' must be a mapping, got {type(value).__name__}")
    return {str(k): str(v) for k, v in value.items()}


def _error(exc: BaseException, doing: str) -> ToolError:
    name = type(exc).__name__
    text = " ".join(str(exc).split()) or name
    return ToolError(f"nats {name}: {doing}: {text}", kind="nats", code=name, retryable=name in _RETRYABLE)


def _require(config: dict, key: str, operation: str) -> str:
    value = config.get(key)
    if value in (None, ""):
        raise ToolConfigError(f"nats `{operation}` needs `{key}`", fix=f"add `{key}:` to the task")
    return str(value)


def _int(config: dict, key: str, default: int, low: int, high: int | None = None) -> int:
    raw = config.get(key)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ToolConfigError(f"nats '{key}' must be a whole number, got {raw!r}") from None
    if value < low:
        raise ToolConfigError(f"nats '{key}' must be >= {low}, got {value}")
    return value if high is None else min(value, high)


# ------------------------------------------------------------------ key-value


async def _kv(js: Any, config: dict, operation: str) -> Any:
    bucket = _require(config, "bucket", operation)
    try:
        return bucket, await js.key_value(bucket)
    except Exception as exc:  # noqa: BLE001
        raise _error(exc, f"cannot open key-value bucket {bucket!r}") from None


async def kv_get(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    from nats.js.errors import KeyNotFoundError

    bucket, kv = await _kv(js, config, "kv_get")
    key = _require(config, "key", "kv_get")
    try:
        entry = await kv.get(key)
    except KeyNotFoundError:
        return {"status": "not_found", "bucket": bucket, "key": key, "value": None}
    return {"status": "success", "bucket": bucket, "key": key, "value": decode(entry.value),
            "revision": entry.revision}


async def kv_put(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    bucket, kv = await _kv(js, config, "kv_put")
    key = _require(config, "key", "kv_put")
    revision = await kv.put(key, encode(config.get("value")))
    return {"status": "success", "bucket": bucket, "key": key, "revision": revision}


async def kv_delete(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    bucket, kv = await _kv(js, config, "kv_delete")
    key = _require(config, "key", "kv_delete")
    await kv.delete(key)
    return {"status": "success", "bucket": bucket, "key": key}


async def kv_purge(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    bucket, kv = await _kv(js, config, "kv_purge")
    key = _require(config, "key", "kv_purge")
    await kv.purge(key)
    return {"status": "success", "bucket": bucket, "key": key}


async def kv_keys(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    from nats.js.errors import NoKeysError

    bucket, kv = await _kv(js, config, "kv_keys")
    try:
        keys = list(await kv.keys())
    except NoKeysError:
        keys = []
    pattern = config.get("pattern")
    if pattern:
        keys = [k for k in keys if fnmatch.fnmatchcase(k, str(pattern))]
    return {"status": "success", "bucket": bucket, "keys": keys, "count": len(keys)}


# ------------------------------------------------------------------ object store


async def _objects(js: Any, config: dict, operation: str) -> Any:
    bucket = _require(config, "bucket", operation)
    try:
        return bucket, await js.object_store(bucket)
    except Exception as exc:  # noqa: BLE001
        raise _error(exc, f"cannot open object store {bucket!r}") from None


async def object_get(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    bucket, store = await _objects(js, config, "object_get")
    name = _require(config, "name", "object_get")
    info = await store.get_info(name)
    if (info.size or 0) > OBJECT_MAX_BYTES:
        raise ToolError(f"nats object {name!r} in {bucket!r} is {info.size:,} bytes, over the "
                        f"{OBJECT_MAX_BYTES:,} bytes a task reads", kind="nats", code="ObjectTooLarge",
                        fix="read it in a `python` task with nats-py and keep only what the playbook needs")
    data = (await store.get(name)).data or b""
    value = base64.b64encode(data).decode() if config.get("encoding") == "base64" else data.decode("utf-8", "replace")
    return {"status": "success", "bucket": bucket, "name": name, "data": value, "size": len(data)}


async def object_put(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    from nats.js.api import ObjectMeta

    bucket, store = await _objects(js, config, "object_put")
    name = _require(config, "name", "object_put")
    raw = config.get("data")
    if config.get("encoding") == "base64" and isinstance(raw, str):
        try:
            data = base64.b64decode(raw, validate=True)
        except ValueError:
            raise ToolConfigError("nats object_put: `data` is not base64 (`encoding: base64`)") from None
    else:
        data = encode(raw)
    info = await store.put(name, data, meta=ObjectMeta(name=name, description=config.get("description")))
    return {"status": "success", "bucket": bucket, "name": name, "size": info.size, "digest": info.digest}


async def object_delete(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    bucket, store = await _objects(js, config, "object_delete")
    name = _require(config, "name", "object_delete")
    await store.delete(name)
    return {"status": "success", "bucket": bucket, "name": name}


def _object_info(info: Any) -> dict[str, Any]:
    return {"name": info.name, "size": info.size, "description": info.description, "chunks": info.chunks,
            "digest": info.digest}


async def object_list(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    from nats.js.errors import NotFoundError

    bucket, store = await _objects(js, config, "object_list")
    try:
        objects = [_object_info(info) for info in await store.list(ignore_deletes=True)]
    except NotFoundError:
        objects = []
    return {"status": "success", "bucket": bucket, "objects": objects, "count": len(objects)}


async def object_info(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    bucket, store = await _objects(js, config, "object_info")
    name = _require(config, "name", "object_info")
    return {"status": "success", "bucket": bucket, **_object_info(await store.get_info(name))}


# ------------------------------------------------------------------ core and JetStream messages


async def publish(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    subject = _require(config, "subject", "publish")
    payload = encode(config.get("data"))
    await nc.publish(subject, payload, headers=_headers(config.get("headers")))
    await nc.flush()  # the server has it before the task reports success
    return {"status": "success", "subject": subject, "bytes": len(payload)}


async def request(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    subject = _require(config, "subject", "request")
    timeout_ms = _int(config, "timeout_ms", REQUEST_TIMEOUT_MS, 1)
    reply = await nc.request(subject, encode(config.get("data")), timeout=timeout_ms / 1000,
                             headers=_headers(config.get("headers")))
    return {"status": "success", "subject": subject, "data": decode(reply.data),
            "headers": dict(reply.headers or {})}


async def js_publish(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    subject = _require(config, "subject", "js_publish")
    stream = config.get("stream") or None
    ack = await js.publish(subject, encode(config.get("data")), stream=stream,
                           headers=_headers(config.get("headers")))
    return {"status": "success", "stream": ack.stream, "seq": ack.seq, "duplicate": bool(ack.duplicate)}


async def js_get_msg(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    stream = _require(config, "stream", "js_get_msg")
    seq, subject = config.get("seq"), config.get("subject")
    if seq not in (None, ""):
        msg = await js.get_msg(stream, seq=_int(config, "seq", 0, 1))
    elif subject or str(config.get("last")).lower() == "true":
        msg = await js.get_last_msg(stream, str(subject or ">"))
    else:
        raise ToolConfigError("nats `js_get_msg` needs `seq`, `subject` or `last: true`")
    return {"status": "success", "stream": stream, "subject": msg.subject, "seq": msg.seq, "data": decode(msg.data)}


async def js_stream_info(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    stream = _require(config, "stream", "js_stream_info")
    info = await js.stream_info(stream)
    cfg, state = info.config, info.state
    return {"status": "success", "stream": stream,
            "config": {"name": cfg.name, "subjects": list(cfg.subjects or []),
                       "retention": getattr(cfg.retention, "value", cfg.retention),
                       "max_msgs": cfg.max_msgs, "max_bytes": cfg.max_bytes, "max_age": cfg.max_age},
            "state": {"messages": state.messages, "bytes": state.bytes, "first_seq": state.first_seq,
                      "last_seq": state.last_seq, "consumer_count": state.consumer_count}}


async def drain(js: Any, config: dict, *, ack: bool, operation: str) -> tuple[str, str, list[dict[str, Any]]]:
    """The bounded drain: at most ``batch`` messages, ``max_bytes`` of payload, ``timeout_ms``."""
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import NotFoundError

    stream = _require(config, "stream", operation)
    consumer = _require(config, "consumer", operation)
    batch = _int(config, "batch", _int(config, "max_messages", BATCH_DEFAULT, 1), 1, BATCH_MAX)
    max_bytes = _int(config, "max_bytes", 0, 1) or None
    timeout_ms = _int(config, "timeout_ms", DRAIN_TIMEOUT_DEFAULT_MS, 1, DRAIN_TIMEOUT_MAX_MS)
    try:
        await js.consumer_info(stream, consumer)
    except NotFoundError:
        raise ToolError(f"nats {operation}: consumer {consumer!r} on stream {stream!r} does not exist",
                        kind="nats", code="NotFoundError",
                        fix="create the durable pull consumer first (`nats consumer add`), as NoETL requires") from None
    sub = await js.pull_subscribe_bind(durable=consumer, stream=stream)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    messages: list[dict[str, Any]] = []
    size = 0
    try:
        while len(messages) < batch and (max_bytes is None or size < max_bytes):
            left = deadline - loop.time()
            if left <= 0:
                break
            # with a byte limit, one message per pull: a message fetched past the limit would
            # be delivered and left unacknowledged until the consumer's ack wait redelivers it
            want = 1 if max_bytes is not None else batch - len(messages)
            try:
                fetched = await sub.fetch(want, timeout=left)
            except (NatsTimeout, TimeoutError):  # nats-py raises either when nothing came in time
                break
            for msg in fetched:
                meta = msg.metadata
                size += len(msg.data or b"")
                messages.append({"id": str(meta.sequence.stream), "subject": msg.subject,
                                 "stream_seq": meta.sequence.stream, "consumer_seq": meta.sequence.consumer,
                                 "delivered": meta.num_delivered, "pending": meta.num_pending,
                                 "data": decode(msg.data), "headers": dict(msg.headers or {})})
                if ack:
                    await msg.ack()
    finally:
        await sub.unsubscribe()
    return stream, consumer, messages


async def js_consume(nc: Any, js: Any, config: dict) -> dict[str, Any]:
    ack = str(config.get("ack", True)).lower() not in ("false", "0", "no")
    stream, consumer, messages = await drain(js, config, ack=ack, operation="js_consume")
    return {"status": "success", "stream": stream, "consumer": consumer, "count": len(messages),
            "messages": messages, "acked": ack}


OPERATIONS: dict[str, Callable[[Any, Any, dict], Awaitable[dict[str, Any]]]] = {
    "kv_get": kv_get, "kv_put": kv_put, "kv_delete": kv_delete, "kv_keys": kv_keys, "kv_purge": kv_purge,
    "object_get": object_get, "object_put": object_put, "object_delete": object_delete,
    "object_list": object_list, "object_info": object_info,
    "js_publish": js_publish, "js_consume": js_consume, "js_get_msg": js_get_msg, "js_stream_info": js_stream_info,
    "publish": publish, "request": request,
}


async def _run(kind: str, config: dict, call: ToolCall, work: Callable[[Any, Any], Awaitable[Any]],
               doing: str) -> Any:
    timeout = resolve_timeout(config, call, DEFAULT_TIMEOUT)
    params = connection(config, call, kind)
    nc = await _connect(params, timeout)
    try:
        return await asyncio.wait_for(work(nc, nc.jetstream()), timeout)
    except TimeoutError:
        raise ToolTimeout(f"{kind} {doing} did not finish within {timeout:g}s") from None
    except ToolError:
        raise
    except Exception as exc:  # noqa: BLE001 - nats-py's errors become the task's error
        raise _error(exc, doing) from None
    finally:
        await nc.close()


class NatsTool:
    declaration = NATS
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        operation = config.get("operation")
        if operation not in OPERATIONS:
            raise ToolConfigError(f"nats operation {operation!r} is not one of {', '.join(OPERATIONS)}",
                                  fix="set `operation:` to one of them")
        op = OPERATIONS[str(operation)]
        return await _run("nats", config, call, lambda nc, js: op(nc, js, config), str(operation))


def _ack_mode(raw: Any) -> tuple[str, bool]:
    """NoETL's ack policy: ``on_success`` (default), ``auto``, ``true`` acknowledge the
    drained messages; ``manual``, ``none``, ``false`` leave them pending."""
    text = "on_success" if raw in (None, "") else str(raw).lower()
    modes = {"on_success": True, "auto": True, "true": True, "manual": False, "none": False, "false": False}
    if text not in modes:
        raise ToolConfigError(f"subscription 'ack' is {raw!r}", fix=f"write one of {', '.join(modes)}")
    return {"true": "on_success", "false": "manual"}.get(text, text), modes[text]


class SubscriptionTool:
    declaration = SUBSCRIPTION
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        source = config.get("source")
        if source in UNAVAILABLE_SOURCES:
            service, fix = UNAVAILABLE_SOURCES[str(source)]
            raise ToolConfigError(f"subscription source {source!r} needs {service}, which noetl-temporal "
                                  "does not run", fix=fix)
        if source != "nats":
            raise ToolConfigError(f"subscription source {source!r} is not one of nats, kafka, pubsub",
                                  fix="write `source: nats`")
        if config.get("operation") not in (None, "", "poll"):
            raise ToolConfigError(f"subscription operation {config['operation']!r} is not supported",
                                  fix="write `operation: poll` (a bounded drain) or leave it out")
        mode, ack = _ack_mode(config.get("ack"))

        async def work(nc: Any, js: Any) -> dict[str, Any]:
            _stream, _consumer, messages = await drain(js, config, ack=ack, operation="subscription")
            return {"status": "success", "source": "nats", "operation": "poll", "count": len(messages),
                    "messages": messages, "acked": ack and bool(messages), "ack_mode": mode,
                    "ack_ids": [m["id"] for m in messages] if ack else []}

        return await _run("subscription", config, call, work, "poll")
