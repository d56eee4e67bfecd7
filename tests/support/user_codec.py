"""An embedding user's own payload codec: it "encrypts" every payload (XOR with a key, which
is enough to show that no plaintext is left), as a production codec would with a real cipher.

The CLI loads it by name, like a user's: ``--codec tests.support.user_codec:codec``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import cycle

from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, PayloadCodec

ENCODING = b"binary/encrypted"
_KEY = b"acme-secret-key-0123456789"


def _xor(data: bytes) -> bytes:
    return bytes(b ^ k for b, k in zip(data, cycle(_KEY), strict=False))


class EncryptingCodec(PayloadCodec):
    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload(metadata={"encoding": ENCODING}, data=_xor(p.SerializeToString())) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [_decrypt(p) if p.metadata.get("encoding") == ENCODING else p for p in payloads]


def _decrypt(payload: Payload) -> Payload:
    restored = Payload()
    restored.ParseFromString(_xor(payload.data))
    return restored


def codec() -> EncryptingCodec:
    return EncryptingCodec()


def converter() -> DataConverter:
    """The user's whole converter: the SDK default with their codec."""
    return DataConverter(payload_codec=EncryptingCodec())
