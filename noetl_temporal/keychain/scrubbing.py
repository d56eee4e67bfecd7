"""Scrubbing: every secret a task saw, in every form it may take, replaced by ``***``.

What counts as secret (:func:`secret_values`): the non-public fields of the entries a task
resolved (a DSN's password too) and what its keychain templates rendered to, each with the
forms a program or a server may have turned it into (JSON-escaped, a repr, base64).
:class:`Scrubber` masks them in text and JSON values before an outcome leaves the activity.

Percent-encoding is not a list of forms but part of how each one is matched: every
character of a secret may appear as itself or as its UTF-8 bytes in ``%XX`` (either hex
case), a space also as ``+``. Clients do not agree on what to escape (httpx leaves
``/:@!()*'`` raw in a URL it is given, but escapes them in ``params`` and forms, as
``quote_plus`` does), so any mixture of raw and escaped characters is masked.

Cut text is masked *before* it is cut (:meth:`Scrubber.window`): a secret that straddles
the cut is masked whole, never shown in part.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

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
    # (percent-encoded forms need no entry of their own: every entry is matched in them)
    out = {secret}
    out.add(unquote(secret))
    out.add(unquote_plus(secret))  # a server reading a '+' a client left raw as a space
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


def _percent_tolerant(secret: str) -> str:
    """A pattern matching ``secret`` with any of its characters percent-encoded (either hex
    case, ``+`` for a space): every form ``quote``, ``quote_plus``, form encoding or a
    client's own choice of safe characters gives, and their mixtures."""
    parts = []
    for ch in secret:
        escaped = "".join(f"%{_hex_digit(b >> 4)}{_hex_digit(b & 15)}" for b in ch.encode("utf-8", "surrogatepass"))
        alternatives = [re.escape(ch), escaped] + ([r"\+"] if ch == " " else [])
        parts.append(f"(?:{'|'.join(alternatives)})")
    return "".join(parts)


def _hex_digit(value: int) -> str:
    digit = f"{value:X}"
    return f"[{digit}{digit.lower()}]" if digit.isalpha() else digit


class Scrubber:
    """Replaces secret strings with ``***`` in text and in JSON values (keys included)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LEN},
                                    key=len, reverse=True))
        # Two patterns for one set of matches: without '%' or '+' in the text no character
        # can be escaped, and the literal one is some 50 times faster on large output.
        self._literal = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None
        self._pattern = re.compile("|".join(_percent_tolerant(s) for s in self.secrets)) if self.secrets else None
        #: the longest text a secret can be matched in (every byte as ``%XX``): how much
        #: more than it shows a cut must keep for :meth:`window` to see a secret whole
        self.longest = max((3 * len(s.encode("utf-8", "surrogatepass")) for s in self.secrets), default=0)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def _for(self, value: str) -> re.Pattern[str]:
        assert self._pattern is not None and self._literal is not None
        return self._pattern if "%" in value or "+" in value else self._literal

    def text(self, value: str) -> str:
        if self._pattern is None or not isinstance(value, str):
            return value
        return self._for(value).sub(MASK, value)

    def window(self, value: str, start: int, end: int) -> str:
        """``value[start:end]`` masked, cut after masking: a secret across either edge is
        replaced whole (``***`` at the edge), so no part of it shows. ``value`` must hold
        :attr:`longest` characters beyond each edge that is a cut for this to see it."""
        if self._pattern is None:
            return value[start:end]
        out, pos = [], start
        for match in self._for(value).finditer(value):
            if match.end() <= start:
                continue
            if match.start() >= end:
                break
            out.append(value[pos:match.start()])
            out.append(MASK)
            pos = match.end()
        if pos < end:
            out.append(value[pos:end])
        return "".join(out)

    def head(self, value: str, limit: int, marker: str = "...") -> str:
        """The first ``limit`` characters of ``value``, masked before the cut (``marker`` after a cut)."""
        return self.text(value) if len(value) <= limit else self.window(value, 0, limit) + marker

    def tail(self, value: str, limit: int) -> str:
        """The last ``limit`` characters of ``value``, masked before the cut."""
        return self.text(value) if len(value) <= limit else self.window(value, len(value) - limit, len(value))

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
