"""Keychain providers: where an entry's fields come from.

:class:`EnvProvider` reads ``NOETL_KEYCHAIN_<NAME>`` (JSON object, or a DSN / plain string)
and ``NOETL_KEYCHAIN_<NAME>_<FIELD>``; :class:`FileProvider` reads ``$NOETL_CREDENTIALS_FILE``
(default ``~/.config/noetl-temporal/credentials.yaml``); :class:`ChainProvider` asks several.
A deployment plugs its own (Vault, a cloud secret manager) with :func:`set_keychain_provider`
or ``NOETL_KEYCHAIN_PROVIDER=module:attr`` (docs/keychain.md). :func:`resolve_entry` turns
one entry name into its fields.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import ToolError

__all__ = ["KeychainProvider", "EnvProvider", "FileProvider", "ChainProvider", "KeychainError",
           "get_keychain_provider", "set_keychain_provider", "resolve_entry", "env_name",
           "default_credentials_file"]

ENV_PREFIX = "NOETL_KEYCHAIN_"
#: declaration keys that describe the entry rather than hold a default value
_DECLARATION_META = frozenset({"name", "kind", "type", "scope", "provider", "credential", "description"})


class KeychainError(ToolError):
    """An entry cannot be resolved (not found, unreadable provider): a task configuration error."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message, kind="keychain", retryable=False, fix=fix)


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
        import yaml  # here: only a keychain that reads the file needs PyYAML (~0.8 MiB of every worker)

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
