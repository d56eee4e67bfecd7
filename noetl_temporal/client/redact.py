"""Secret redaction for debug views of execution variables (ctx, workload).

Why a separate, pure function: the variables view exists for debugging and is the one
place execution data leaves the API, so what it hides must be easy to read and test.
A value is hidden when its key *looks* secret (``password``, ``api_key``, ``dbToken``,
``pg_dsn`` ...); credentials embedded in URLs (``postgresql://user:pw@host``) are masked
wherever they appear. It over-redacts on purpose: a hidden harmless value costs little.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MASK", "redact", "is_secret_key"]

MASK = "***"

#: words that make a key secret when they appear as a word of it (split on _ - . and camelCase)
SECRET_WORDS = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token", "tokens",
    "apikey", "key", "credential", "credentials", "creds", "auth", "authorization", "dsn",
    "cookie", "session", "private", "signature", "bearer", "jwt", "otp",
})
#: run-together spellings that word splitting cannot see
SECRET_SUBSTRINGS = ("password", "passwd", "secret", "token", "apikey", "api_key", "privatekey",
                     "credential", "accesskey", "secretkey")

_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]+)@")


def is_secret_key(key: object) -> bool:
    """True when a mapping key names something secret."""
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    if any(part in lowered for part in SECRET_SUBSTRINGS):
        return True
    return any(word.lower() in SECRET_WORDS for word in _WORDS.findall(key))


def _mask_urls(text: str) -> str:
    return _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)


def redact(value: Any, *, path: str = "", hidden: list[str] | None = None) -> Any:
    """A copy of ``value`` with secret-looking entries replaced by ``***``.

    ``hidden`` (when given) collects the JSON paths that were masked, so a caller can say
    what it hid without showing it.
    """
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if is_secret_key(key) and item is not None and item != "":
                out[key] = MASK
                if hidden is not None:
                    hidden.append(child)
            else:
                out[key] = redact(item, path=child, hidden=hidden)
        return out
    if isinstance(value, list | tuple):
        return [redact(item, path=f"{path}[{i}]", hidden=hidden) for i, item in enumerate(value)]
    if isinstance(value, str) and "://" in value:
        masked = _mask_urls(value)
        if masked != value and hidden is not None:
            hidden.append(path)
        return masked
    return value
