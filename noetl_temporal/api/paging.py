"""Opaque, signed page tokens for ``GET /executions``.

Why sign them: Temporal answers a malformed page token with an internal error (after
retries), so a token must be proven ours before it reaches Temporal. The signature also
binds a token to the filter it was issued for. Tokens are valid for the life of the API
process (or across processes that share ``Settings.page_secret``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from .errors import BadRequest

__all__ = ["encode_token", "decode_token"]

_MAC = 16


def _mac(secret: bytes, query: str, raw: bytes) -> bytes:
    return hmac.new(secret, query.encode("utf-8") + b"\0" + raw, hashlib.sha256).digest()[:_MAC]


def encode_token(raw: bytes | None, *, query: str, secret: bytes) -> str | None:
    if not raw:
        return None
    return base64.urlsafe_b64encode(_mac(secret, query, raw) + raw).decode("ascii").rstrip("=")


def decode_token(token: str | None, *, query: str, secret: bytes) -> bytes | None:
    if not token:
        return None
    try:
        blob = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        blob = b""
    mac, raw = blob[:_MAC], blob[_MAC:]
    if not raw or not hmac.compare_digest(mac, _mac(secret, query, raw)):
        raise BadRequest("page_token is not a token this API issued for this filter: start from the first page")
    return raw
