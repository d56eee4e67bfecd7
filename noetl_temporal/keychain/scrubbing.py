"""Scrubbing: every secret a task saw, in every form it may take, replaced by ``***``.

What counts as secret (:func:`secret_values`): the non-public fields of the entries a task
resolved (a DSN's password too) and what its keychain templates rendered to, each with the
forms a program or a server may have turned it into (URL-quoted, JSON-escaped, base64).
:class:`Scrubber` masks them in text and JSON values before an outcome leaves the activity.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

__all__ = ["MASK", "PUBLIC_FIELDS", "MIN_SECRET_LEN", "Scrubber", "secret_values"]

MASK = "***"
#: shortest string treated as a secret: shorter ones would mask innocent text everywhere
MIN_SECRET_LEN = 4
#: fields of an entry that are connection coordinates, not secrets: never masked
PUBLIC_FIELDS = frozenset({
    "name", "kind", "type", "scope", "provider", "credential", "description",
    "host", "hostname", "server", "port", "user", "username", "login", "dbname", "database", "db",
    "schema", "sslmode", "region", "account", "connect_timeout", "application_name",
})


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _base64_cores(secret: str) -> set[str]:
    """The base64 text of ``secret`` wherever it sits in an encoded stream: for each of the
    three byte alignments, the characters that depend on the secret's bytes alone."""
    data = secret.encode("utf-8", "surrogatepass")
    out: set[str] = set()
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * shift + data).decode()
            start, end = 4 * -(-shift // 3), 4 * ((shift + len(data)) // 3)
            out.add(text[start:end])
    out.add(base64.b64encode(data).decode())   # the whole secret encoded on its own, padding included
    return out


def _escaped(secret: str) -> set[str]:
    """How a secret looks once a server or a program quoted it: JSON-escaped (``\\"``,
    ``\\\\``, ``\\uXXXX``), a Python repr, escaped twice (JSON inside a JSON string)."""
    out = {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1],
           repr(secret.replace("'", '"'))[1:-1]}
    out |= {json.dumps(s)[1:-1] for s in list(out)}
    return out


def _variants(secret: str) -> set[str]:
    out = {secret}
    out.add(quote(secret, safe=""))
    out.add(quote_plus(secret))
    out.add(unquote(secret))
    out |= _escaped(secret)
    out |= _base64_cores(secret)
    if "://" in secret:  # a URL/DSN: its password alone is secret too
        try:
            password = urlsplit(secret).password
        except ValueError:
            password = None
        if password:
            out |= {password, unquote(password)}
    m = re.search(r"(?:^|\s)password\s*=\s*'?([^'\s]+)", secret)
    if m:
        out.add(m.group(1))
    return {s for s in out if len(s) >= MIN_SECRET_LEN}


def secret_values(entries: Mapping[str, Mapping[str, Any]], rendered: Iterable[Any] = ()) -> list[str]:
    """The strings to mask: every non-public field value of the resolved entries (and the
    password inside a DSN), plus every rendered deferred template that is not just a public value."""
    secrets: set[str] = set()
    public: set[str] = set()
    for entry in entries.values():
        for key, value in entry.items():
            if str(key).lower() in PUBLIC_FIELDS:
                public.update(s for s in _strings(value))
                continue
            for s in _strings(value):
                secrets |= _variants(s)
    for value in rendered:
        for s in _strings(value):
            if s not in public and len(s) >= MIN_SECRET_LEN:
                secrets |= _variants(s)
    return sorted(secrets, key=len, reverse=True)


class Scrubber:
    """Replaces secret strings with ``***`` in text and in JSON values (keys included)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LEN},
                                    key=len, reverse=True))
        self._pattern = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, value: str) -> str:
        if self._pattern is None or not isinstance(value, str):
            return value
        return self._pattern.sub(MASK, value)

    def __call__(self, value: Any) -> Any:
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(k) if isinstance(k, str) else k: self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value
