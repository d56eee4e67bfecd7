"""Preparing a task's configuration: its secrets resolved and rendered in, and a scrubber.

The activity calls :func:`prepare` (in a worker thread: providers may block) to

1. find the entries the task needs: ``keychain.<name>.<field>`` in its deferred templates
   (``references``), and the entry its kind's ``auth`` names when the kind declares
   :class:`~noetl_temporal.tool_kinds.declaration.Credentials` (``postgres``),
2. resolve them through the provider (``providers``),
3. render the deferred templates with them, and
4. return a :class:`~.scrubbing.Scrubber` that replaces every secret value in the outcome
   with ``***`` before the outcome leaves the activity (``scrubbing``).

What is kind-specific (which key names the entry, which keys hold a connection that must
not be written in the playbook) is declared by the kind (``tool_kinds/<kind>.py``), not
tested here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TemplateError, ToolConfigError, ToolError
from ..templates import is_template, render_value
from ..tool_kinds import DECLARATIONS
from ..tool_kinds.declaration import Credentials
from .providers import KeychainProvider, get_keychain_provider, resolve_entry
from .references import deferred_templates, reads_keychain, referenced_entries
from .scrubbing import Scrubber, secret_values

__all__ = ["Prepared", "prepare", "needs_keychain"]


def _credentials(kind: str) -> Credentials | None:
    """What ``kind`` declares about its keychain connection (``None``: nothing)."""
    decl = DECLARATIONS.get(kind)
    return decl.credentials if decl is not None else None


@dataclass
class Prepared:
    """A task's configuration with its secrets rendered in, and how to hide them again."""

    config: dict[str, Any]
    entries: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    scrubber: Scrubber = field(default_factory=Scrubber, repr=False)


def _check_connection_source(kind: str, rules: Credentials, config: Mapping[str, Any]) -> None:
    """The kind's connection keys (and a mapping ``auth``) must come from the keychain."""
    keys = [*rules.connection] + ([rules.auth] if not isinstance(config.get(rules.auth), str) else [])
    for key in keys:
        value = config.get(key)
        if value is None or value == "" or value == {}:
            continue
        if not deferred_templates(value, []):
            raise ToolConfigError(
                f"{kind} '{key}' is written in the playbook: its credentials would be stored in "
                f"workflow history",
                fix=f"declare a keychain entry and use '{rules.auth}: <name>', or '{key}: "
                    "\"{{ keychain.<name>.dsn }}\"' (see docs/keychain.md)")


def _endpoints(rules: Credentials | None, config: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(label, mapping)`` of each part of ``config`` that takes ``auth``/``connection``:
    the configuration itself, or its ``within`` sub-mappings of a ``within_types`` type."""
    if rules is None:
        return []
    if not rules.within:
        return [("", config)]
    return [(f" {key}", sub) for key in rules.within
            if isinstance(sub := config.get(key), Mapping) and sub.get("type") in rules.within_types]


def needs_keychain(kind: str, config: Mapping[str, Any]) -> bool:
    """Cheap check: does :func:`prepare` have anything to resolve or check for this task?"""
    return _credentials(kind) is not None or bool(deferred_templates(config, []))


def prepare(kind: str, config: Mapping[str, Any], *, secret_context: Mapping[str, Any] | None = None,
            declarations: Iterable[Mapping[str, Any]] = (),
            provider: KeychainProvider | None = None, leave: Callable[[str], bool] | None = None) -> Prepared:
    """Resolve the entries a task needs and render its deferred (``keychain``) templates,
    but those ``leave`` picks (the activity renders them in a render child, with the entries:
    docs/durability.md, "Task-side renders"; it masks what they render).

    Blocking (providers may do I/O): call it from a worker thread in async code.
    """
    config = dict(config)
    rules = _credentials(kind)
    for label, part in _endpoints(rules, config):
        _check_connection_source(kind + label, rules, part)  # type: ignore[arg-type]
    declared = {str(d.get("name")): dict(d) for d in declarations if d.get("name")}
    names = referenced_entries(config, declared.values())
    for _, part in _endpoints(rules, config):
        auth = part.get(rules.auth)  # type: ignore[union-attr]
        if isinstance(auth, str) and auth.strip() and not is_template(auth):
            names.add(auth.strip())
    if not names:
        return Prepared(config)
    provider = provider or get_keychain_provider()
    entries = {name: resolve_entry(name, declared.get(name), provider) for name in sorted(names)}
    deferred = [t for t in deferred_templates(config, []) if leave is None or not leave(t)]
    context = {**dict(secret_context or {}), "keychain": entries}
    try:
        rendered = render_value(config, context, where="tool",
                                defer=lambda t: not reads_keychain(t) or (leave is not None and leave(t)))
    except TemplateError as exc:
        # A render error can quote what it rendered: a filter's repr of the value (`xmlattr`),
        # a KeyError naming it (`'{' ~ token ~ '}' .format()`). Every render error of a task
        # with secrets passes here, so it is masked here, once, before it becomes the task's error.
        raise ToolError(Scrubber(secret_values(entries)).text(str(exc)), kind="template",
                        retryable=False) from None
    for _, part in _endpoints(rules, rendered):
        auth = part.get(rules.auth)  # type: ignore[union-attr]
        if isinstance(auth, str) and auth.strip() and auth.strip() not in entries:
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
