"""Claim check for large payloads: a Temporal payload codec that keeps history small.

Any payload over ``threshold`` bytes (activity inputs and results, workflow input and
output, query answers) is written to a payload store under its SHA-256 and replaced in
history by a small reference payload. Decoding reads it back. Temporal's hard limit is
2 MB per payload (warning at 512 KB); with the claim check a playbook that carries a large
``ctx`` or a large loop result stays far below it.

Client and workers must use the same store: the payloads of ``$NOETL_STORE``, a shared
directory (default ``~/.local/share/noetl-temporal/payloads``) or PostgreSQL
(``noetl_temporal.store.payloads``). Stored payloads are content-addressed, so writes are
idempotent. The converter that applies this codec is ``converter.data_converter``.

A local activity's arguments never enter history: the workflow marks them
(``local_only``) and they stay inline whatever their size.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from ..store.blobs import payload_location
from ..store.payloads import open_payload_store
from .local_only import LOCAL_ONLY_ENCODING

__all__ = ["ClaimCheckCodec", "DEFAULT_THRESHOLD", "default_payload_store"]

DEFAULT_THRESHOLD = 128 * 1024
_ENCODING = b"noetl/claim-check"
_LOCAL_ONLY = LOCAL_ONLY_ENCODING.encode()


def default_payload_store() -> str:
    """Where payloads go by default: the payloads of ``$NOETL_STORE`` (``store/blobs.py``)."""
    return payload_location()


class ClaimCheckCodec(PayloadCodec):
    def __init__(self, store: str | None = None, threshold: int = DEFAULT_THRESHOLD) -> None:
        self._store = open_payload_store(store)
        self.threshold = threshold

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for payload in payloads:
            if payload.metadata.get("encoding") == _LOCAL_ONLY or payload.ByteSize() <= self.threshold:
                out.append(payload)
                continue
            data = payload.SerializeToString()
            key = hashlib.sha256(data).hexdigest()
            await asyncio.to_thread(self._store.put, key, data)
            out.append(Payload(metadata={"encoding": _ENCODING, "size": str(len(data)).encode()},
                               data=key.encode()))
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for payload in payloads:
            if payload.metadata.get("encoding") != _ENCODING:
                out.append(payload)
                continue
            key = payload.data.decode()
            try:
                data = await asyncio.to_thread(self._store.get, key)
            except (OSError, KeyError):
                raise RuntimeError(f"large payload {key} is missing from the payload store "
                                   f"({self._store.location}); client and workers must share it "
                                   "(set NOETL_STORE to one URL for all of them)") from None
            restored = Payload()
            restored.ParseFromString(data)
            out.append(restored)
        return out

