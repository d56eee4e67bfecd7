"""Data at rest outside Temporal under the deployment's own payload codec.

A deployment whose codec encrypts keeps plaintext out of Temporal's history; the stores
noetl-temporal writes beside it (the event store's event bodies, the result store's large
results) are sealed with the same codec, so the user configures protection once:

* the worker seals with its client's codec (``build_worker`` installs it, see
  ``conversion/converter.py``);
* the CLI and the API with the one they connect with (``--codec`` / ``$NOETL_CODEC``);
* anything else that reads the stores with ``$NOETL_CODEC`` (read on first use).

A sealed value is the codec's output ``Payload``, serialized, behind a fixed prefix, so a
reader tells sealed from clear data (stores written before a codec was configured stay
readable). The searchable envelope fields of events (ids, types, seq, status, timestamps)
stay clear in their own columns; only the body is sealed.

One codec per process: the last one installed (a process hosting workers of two
deployments with different codecs seals with the last worker's).

The codec is async; the stores are called from threads and from synchronous code, so it
runs on one event loop of its own, in a daemon thread. A codec must therefore not be
bound to the loop that created it.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import os
import threading
from collections.abc import Coroutine
from typing import Any

__all__ = ["CODEC_ENV", "SEALED_PREFIX", "load", "install", "reset", "current", "seal", "unseal", "seal_many",
           "unseal_many", "seal_texts", "unseal_texts"]

#: ``module:factory`` of the deployment's DataConverter or PayloadCodec (also ``--codec``)
CODEC_ENV = "NOETL_CODEC"
SEALED_PREFIX = b"noetl-sealed:v1:"
_TEXT_PREFIX = SEALED_PREFIX.decode()
_RAW = b"binary/plain"

_lock = threading.Lock()
_installed: list[Any] = []        # [codec or None] once decided
_loop: asyncio.AbstractEventLoop | None = None


def load(spec: str | None) -> Any:
    """The DataConverter or PayloadCodec that ``module:factory`` names (None for none).

    ``factory`` is an attribute of the module: a converter or codec, or something callable
    without arguments that returns one. Raises ``ValueError`` saying what is wrong."""
    from temporalio.converter import DataConverter, PayloadCodec

    if not spec:
        return None
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"codec {spec!r} is not MODULE:FACTORY")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"codec {spec!r} cannot be loaded: {exc}") from None
    if callable(value) and not isinstance(value, DataConverter | PayloadCodec):
        value = value()
    if not isinstance(value, DataConverter | PayloadCodec):
        raise ValueError(f"codec {spec!r} gave a {type(value).__name__}, not a DataConverter or PayloadCodec")
    return value


def install(codec: Any) -> None:
    """Seal this process's stores with ``codec`` (a ``PayloadCodec``; None: leave them clear)."""
    with _lock:
        _installed[:] = [codec]


def reset() -> None:
    """Forget the installed codec: the next use reads ``$NOETL_CODEC`` again."""
    with _lock:
        _installed.clear()


def current() -> Any:
    """The installed codec, else the one ``$NOETL_CODEC`` names (its converter's codec)."""
    with _lock:
        if not _installed:
            value = load(os.environ.get(CODEC_ENV))
            _installed.append(getattr(value, "payload_codec", value))
        return _installed[0]


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="noetl-sealing", daemon=True).start()
        loop = _loop
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


def seal(data: bytes) -> bytes:
    """``data`` through the codec (unchanged when none is configured)."""
    return seal_many([data])[0]


def seal_many(items: list[bytes]) -> list[bytes]:
    """Each of ``items`` sealed, in one call of the codec."""
    codec = current()
    if codec is None or not items:
        return list(items)
    from temporalio.api.common.v1 import Payload

    sealed = _run(codec.encode([Payload(metadata={"encoding": _RAW}, data=data) for data in items]))
    if len(sealed) != len(items):
        raise ValueError(f"the payload codec returned {len(sealed)} payloads for {len(items)}: cannot seal with it")
    return [SEALED_PREFIX + payload.SerializeToString() for payload in sealed]


def unseal(data: bytes) -> bytes:
    """The clear bytes of ``data`` (clear data passes through)."""
    return unseal_many([data])[0]


def unseal_many(items: list[bytes]) -> list[bytes]:
    """Each of ``items`` opened (clear ones pass through), in one call of the codec."""
    at = [i for i, data in enumerate(items) if data.startswith(SEALED_PREFIX)]
    if not at:
        return list(items)
    codec = current()
    if codec is None:
        raise ValueError("this data was sealed with the deployment's payload codec, and none is configured "
                         f"here (set --codec or ${CODEC_ENV} to the codec the workers use)")
    from temporalio.api.common.v1 import Payload

    sealed = []
    for i in at:
        payload = Payload()
        payload.ParseFromString(items[i][len(SEALED_PREFIX):])
        sealed.append(payload)
    opened = _run(codec.decode(sealed))
    out = list(items)
    for i, payload in zip(at, opened, strict=True):
        out[i] = bytes(payload.data)
    return out


def seal_texts(texts: list[str]) -> list[str]:
    """Each text sealed, as text (a prefix and base64) for a TEXT column; unchanged without a codec."""
    if current() is None:   # the usual case: no bytes to make and compare per text
        return list(texts)
    return [_TEXT_PREFIX + base64.b64encode(sealed[len(SEALED_PREFIX):]).decode()
            if sealed.startswith(SEALED_PREFIX) else text
            for text, sealed in zip(texts, seal_many([t.encode() for t in texts]), strict=True)]


def unseal_texts(texts: list[str]) -> list[str]:
    raw = [SEALED_PREFIX + base64.b64decode(t[len(_TEXT_PREFIX):]) if t.startswith(_TEXT_PREFIX) else t.encode()
           for t in texts]
    return [data.decode() for data in unseal_many(raw)]
