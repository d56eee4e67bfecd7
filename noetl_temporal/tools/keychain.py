"""Keychain: the secrets a task needs, resolved inside its activity and nowhere else.

The engine leaves every configuration string that reads ``keychain`` as an unrendered
template (so workflow history only ever holds ``{{ keychain.api.token }}``); the activity
calls :func:`prepare` to

1. find the entries the task needs (``keychain.<name>.<field>`` in those templates, and
   ``auth: <name>`` of a postgres task),
2. resolve them through a :class:`KeychainProvider` (default: environment variables,
   then a credentials file),
3. render the deferred templates with them, and
4. return a :class:`Scrubber` that replaces every secret value in the outcome with
   ``***`` before the outcome leaves the activity.

Providers (see docs/keychain.md): :class:`EnvProvider` reads ``NOETL_KEYCHAIN_<NAME>``
(JSON object, or a DSN / plain string) and ``NOETL_KEYCHAIN_<NAME>_<FIELD>``;
:class:`FileProvider` reads ``$NOETL_CREDENTIALS_FILE`` (default
``~/.config/noetl-temporal/credentials.yaml``). Plug your own (Vault, a cloud secret
manager) with :func:`set_keychain_provider` or ``NOETL_KEYCHAIN_PROVIDER=module:attr``.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote, quote_plus, unquote, urlsplit

import yaml
from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

from ..errors import TemplateError, ToolConfigError, ToolError
from ..templates import is_template, reads_name, render_value
from ..tool_kinds import CREDENTIAL_KINDS

__all__ = [
    "KeychainProvider", "EnvProvider", "FileProvider", "ChainProvider", "KeychainError", "Scrubber",
    "Prepared", "prepare", "needs_keychain", "get_keychain_provider", "set_keychain_provider", "env_name",
    "default_credentials_file", "referenced_entries", "secret_values", "MASK", "PUBLIC_FIELDS",
]

MASK = "***"
ENV_PREFIX = "NOETL_KEYCHAIN_"
#: shortest string treated as a secret: shorter ones would mask innocent text everywhere
MIN_SECRET_LEN = 4
#: fields of an entry that are connection coordinates, not secrets: never masked
PUBLIC_FIELDS = frozenset({
    "name", "kind", "type", "scope", "provider", "credential", "description",
    "host", "hostname", "server", "port", "user", "username", "login", "dbname", "database", "db",
    "schema", "sslmode", "region", "account", "connect_timeout", "application_name",
})
#: declaration keys that describe the entry rather than hold a default value
_DECLARATION_META = frozenset({"name", "kind", "type", "scope", "provider", "credential", "description"})

_reads_keychain = reads_name("keychain")


class KeychainError(ToolError):
    """An entry cannot be resolved (not found, unreadable provider): a task configuration error."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message, kind="keychain", retryable=False, fix=fix)


# --------------------------------------------------------------------------- providers


@runtime_checkable
class KeychainProvider(Protocol):
    """Resolves one keychain entry to its fields.

    ``declaration`` is the playbook's ``keychain:`` item (``{name, kind?, ...}``; just
    ``{name}`` for an undeclared ``auth:`` name). Return a mapping of fields
    (``{"token": ...}``, ``{"host": ..., "password": ...}``), or ``None`` when this provider
    does not know the entry. Raise :class:`KeychainError` for a provider failure. Called in
    activities only, possibly from several tasks at once: keep it thread- and async-safe
    (it runs in a worker thread, so blocking I/O is fine).
    """

    def resolve(self, name: str, declaration: Mapping[str, Any]) -> Mapping[str, Any] | None: ...


def env_name(name: str) -> str:
    """``NOETL_KEYCHAIN_<NAME>``: upper case, every character outside ``[A-Za-z0-9]`` as ``_``."""
    return ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _lookup_name(name: str, declaration: Mapping[str, Any]) -> str:
    credential = declaration.get("credential")
    return credential if isinstance(credential, str) and credential.strip() else name


def _looks_like_dsn(text: str) -> bool:
    return "://" in text or bool(re.match(r"^\s*\w+\s*=", text))


def _from_text(text: str) -> dict[str, Any]:
    """A single value: a JSON object, else ``{"value": text}`` (plus ``dsn`` when it looks like one)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            raise KeychainError("a keychain value starts with '{' but is not valid JSON",
                                fix="write a JSON object, or a DSN / plain string") from None
        if isinstance(parsed, dict):
            return parsed
    out: dict[str, Any] = {"value": text}
    if _looks_like_dsn(text):
        out["dsn"] = text
    return out


class EnvProvider:
    """``NOETL_KEYCHAIN_<NAME>`` (JSON object, DSN or string) and ``NOETL_KEYCHAIN_<NAME>_<FIELD>``.

    Field variables win over the fields of the whole-entry variable.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ

    def resolve(self, name: str, declaration: Mapping[str, Any]) -> dict[str, Any] | None:
        env = self._environ if self._environ is not None else os.environ
        key = env_name(_lookup_name(name, declaration))
        found: dict[str, Any] | None = None
        if key in env:
            found = _from_text(env[key])
        prefix = key + "_"
        for var, value in env.items():
            if var.startswith(prefix) and len(var) > len(prefix):
                found = found if found is not None else {}
                found[var[len(prefix):].lower()] = value
        return found


def default_credentials_file() -> Path:
    explicit = os.environ.get("NOETL_CREDENTIALS_FILE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "noetl-temporal" / "credentials.yaml"


class FileProvider:
    """A YAML (or JSON) file ``{name: {field: value, ...}}``; a string value is a DSN/string.

    The path is read at each resolution (``$NOETL_CREDENTIALS_FILE``, else
    ``~/.config/noetl-temporal/credentials.yaml``); a missing file knows no entries.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self._path = Path(path).expanduser() if path is not None else None

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else default_credentials_file()

    def resolve(self, name: str, declaration: Mapping[str, Any]) -> dict[str, Any] | None:
        path = self.path
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise KeychainError(f"cannot read the credentials file {path}: {exc.strerror}") from None
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise KeychainError(f"the credentials file {path} is not valid YAML{where}") from None
        if not isinstance(data, Mapping):
            raise KeychainError(f"the credentials file {path} must map entry names to their fields")
        entry = data.get(_lookup_name(name, declaration))
        if entry is None:
            return None
        if isinstance(entry, str):
            return _from_text(entry)
        if not isinstance(entry, Mapping):
            raise KeychainError(f"credentials file entry {name!r} must be a mapping or a string")
        return dict(entry)


class ChainProvider:
    """Asks each provider in turn and merges what they know: earlier providers win per field."""

    def __init__(self, providers: Iterable[KeychainProvider]) -> None:
        self.providers = list(providers)

    def resolve(self, name: str, declaration: Mapping[str, Any]) -> dict[str, Any] | None:
        merged: dict[str, Any] | None = None
        for provider in reversed(self.providers):
            found = provider.resolve(name, declaration)
            if found is not None:
                merged = {**(merged or {}), **dict(found)}
        return merged


_PROVIDER: KeychainProvider | None = None
_PROVIDER_LOCK = threading.Lock()


def set_keychain_provider(provider: KeychainProvider | None) -> None:
    """Use ``provider`` for every task of this process (``None``: back to the default)."""
    global _PROVIDER
    with _PROVIDER_LOCK:
        _PROVIDER = provider


def _load_provider(spec: str) -> KeychainProvider:
    module_name, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name.strip())
        for part in (attr or "provider").strip().split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise KeychainError(f"cannot load the keychain provider {spec!r}: {exc}",
                            fix="set NOETL_KEYCHAIN_PROVIDER to 'package.module:attribute'") from None
    if not hasattr(target, "resolve") and callable(target):
        target = target()
    if not hasattr(target, "resolve"):
        raise KeychainError(f"the keychain provider {spec!r} has no resolve(name, declaration) method")
    return target


def get_keychain_provider() -> KeychainProvider:
    """The configured provider: :func:`set_keychain_provider`, else ``$NOETL_KEYCHAIN_PROVIDER``,
    else environment variables then the credentials file."""
    if _PROVIDER is not None:
        return _PROVIDER
    spec = os.environ.get("NOETL_KEYCHAIN_PROVIDER")
    if spec:
        return _load_provider(spec)
    return ChainProvider([EnvProvider(), FileProvider()])


def resolve_entry(name: str, declaration: Mapping[str, Any] | None,
                  provider: KeychainProvider | None = None) -> dict[str, Any]:
    """One entry's fields: the declaration's non-meta keys as defaults, provider values over them."""
    declaration = dict(declaration or {"name": name})
    provider = provider or get_keychain_provider()
    found = provider.resolve(name, declaration)
    if found is None:
        lookup = _lookup_name(name, declaration)
        raise KeychainError(
            f"keychain entry {name!r} not found",
            fix=f"set {env_name(lookup)} (JSON or a DSN) or {env_name(lookup)}_<FIELD> on the worker, "
                f"or add '{lookup}' to {default_credentials_file()} (see docs/keychain.md)")
    defaults = {k: v for k, v in declaration.items() if k not in _DECLARATION_META}
    return {**defaults, **dict(found)}


# ------------------------------------------------------------------------ references

_AST_ENV = Environment()


def _names_in(text: str) -> set[str] | None:
    """Entry names a template reads as ``keychain.<name>`` / ``keychain['name']``;
    ``None`` when it reads ``keychain`` some other way (all entries are needed then)."""
    try:
        ast = _AST_ENV.parse(text)
    except TemplateSyntaxError:
        return set()
    names: set[str] = set()
    direct: set[int] = set()
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        assert isinstance(node, (nodes.Getattr, nodes.Getitem))  # find_all is typed as any Node
        base = node.node
        if isinstance(base, nodes.Name) and base.name == "keychain":
            if isinstance(node, nodes.Getattr):
                names.add(node.attr)
            elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                names.add(node.arg.value)
            else:
                continue
            direct.add(id(base))
    for node in ast.find_all(nodes.Name):
        if node.name == "keychain" and node.ctx == "load" and id(node) not in direct:
            return None
    return names


def _deferred(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, str):
        if _reads_keychain(value):
            out.append(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            _deferred(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _deferred(v, out)
    return out


def referenced_entries(config: Any, declarations: Iterable[Mapping[str, Any]] = ()) -> set[str]:
    """Entry names the deferred templates of ``config`` read."""
    declared = [str(d.get("name")) for d in declarations if d.get("name")]
    names: set[str] = set()
    for text in _deferred(config, []):
        found = _names_in(text)
        if found is None:
            names.update(declared)
        else:
            names.update(found)
    return names


# --------------------------------------------------------------------------- secrets


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


# --------------------------------------------------------------------------- prepare


@dataclass
class Prepared:
    """A task's configuration with its secrets rendered in, and how to hide them again."""

    config: dict[str, Any]
    entries: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    scrubber: Scrubber = field(default_factory=Scrubber, repr=False)


_CONNECTION_KEYS = ("dsn", "connection")


def _check_connection_source(kind: str, config: Mapping[str, Any]) -> None:
    """postgres: a ``dsn``/``connection`` (or a mapping ``auth``) must come from the keychain."""
    if kind not in CREDENTIAL_KINDS:
        return
    keys = [*_CONNECTION_KEYS] + (["auth"] if not isinstance(config.get("auth"), str) else [])
    for key in keys:
        value = config.get(key)
        if value is None or value == "" or value == {}:
            continue
        if not _deferred(value, []):
            raise ToolConfigError(
                f"postgres '{key}' is written in the playbook: its credentials would be stored in "
                f"workflow history",
                fix=f"declare a keychain entry and use 'auth: <name>', or '{key}: "
                    "\"{{ keychain.<name>.dsn }}\"' (see docs/keychain.md)")


def needs_keychain(kind: str, config: Mapping[str, Any]) -> bool:
    """Cheap check: does :func:`prepare` have anything to resolve or check for this task?"""
    return kind in CREDENTIAL_KINDS or bool(_deferred(config, []))


def prepare(kind: str, config: Mapping[str, Any], *, secret_context: Mapping[str, Any] | None = None,
            declarations: Iterable[Mapping[str, Any]] = (),
            provider: KeychainProvider | None = None) -> Prepared:
    """Resolve the entries a task needs and render its deferred (``keychain``) templates.

    Blocking (providers may do I/O): call it from a worker thread in async code.
    """
    config = dict(config)
    _check_connection_source(kind, config)
    declared = {str(d.get("name")): dict(d) for d in declarations if d.get("name")}
    names = referenced_entries(config, declared.values())
    auth = config.get("auth")
    if kind in CREDENTIAL_KINDS and isinstance(auth, str) and auth.strip() and not is_template(auth):
        names.add(auth.strip())
    if not names:
        return Prepared(config)
    provider = provider or get_keychain_provider()
    entries = {name: resolve_entry(name, declared.get(name), provider) for name in sorted(names)}
    deferred = _deferred(config, [])
    context = {**dict(secret_context or {}), "keychain": entries}
    try:
        rendered = render_value(config, context, where="tool", defer=lambda t: not _reads_keychain(t))
    except TemplateError as exc:
        # The template text is in the message, never a rendered secret (nothing rendered).
        raise ToolError(str(exc), kind="template", retryable=False) from None
    auth = rendered.get("auth")
    if kind in CREDENTIAL_KINDS and isinstance(auth, str) and auth.strip() and auth.strip() not in entries:
        # ``auth: "{{ keychain... }}"`` that renders to an entry name
        entries[auth.strip()] = resolve_entry(auth.strip(), declared.get(auth.strip()), provider)
    rendered_values = [_pick(rendered, config, text) for text in deferred]
    scrubber = Scrubber(secret_values(entries, rendered_values))
    return Prepared(rendered, entries, scrubber)


def _pick(rendered: Any, original: Any, text: str) -> Any:
    """The rendered value(s) of the deferred string ``text`` (same positions in both trees)."""
    found: list[Any] = []

    def walk(r: Any, o: Any) -> None:
        if isinstance(o, str):
            if o == text:
                found.append(r)
        elif isinstance(o, Mapping) and isinstance(r, Mapping):
            for k, v in o.items():
                if k in r:
                    walk(r[k], v)
        elif isinstance(o, list | tuple) and isinstance(r, list | tuple):
            for rv, ov in zip(r, o, strict=False):
                walk(rv, ov)

    walk(rendered, original)
    return found
