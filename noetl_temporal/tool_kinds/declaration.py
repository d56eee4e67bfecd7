"""What a tool kind declares about itself: its settings and its traits.

One :class:`ToolKind` per kind, in ``tool_kinds/<kind>.py``, is the single place that says
which keys a task of that kind takes (required, optional, their types, whether a template
may stand for the value) and how the runtime treats the kind (runs in the workflow or in an
activity, reads ResultRefs itself, always needs the keychain). ``validate`` checks tasks
against it (``dsl/tool_check.py``), the tool class points at it (``Tool.declaration``), the
engine, activity and keychain read the traits from it, and ``docs/tools.md``'s settings
tables are generated from it. Pure data: the DSL imports it without importing any tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Setting", "Credentials", "ToolKind", "COMMON", "accepts", "value_type", "type_names"]

#: JSON types a setting may have
Type = Literal["string", "number", "integer", "boolean", "mapping", "list", "null", "any"]


@dataclass(frozen=True)
class Setting:
    """One key of a task's configuration."""

    name: str
    types: tuple[Type, ...]
    doc: str
    aliases: tuple[str, ...] = ()
    #: a ``{{ }}`` string may stand for the value (rendered before the tool runs);
    #: ``False`` where the value is read as written (an expression the tool evaluates)
    template: bool = True
    #: a mapping value may hold only these keys, each a number of seconds (or a template);
    #: empty: a mapping is checked no further (http's ``timeout: {connect, read}``)
    phases: tuple[str, ...] = ()
    #: a literal string value must be one of these (empty: any)
    choices: tuple[str, ...] = ()
    #: a literal number must be > 0 (a number of seconds)
    positive: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Credentials:
    """How a kind takes its connection from the keychain (the keychain's ``prepare`` reads
    it; a kind that declares it always has its keychain prepared).

    ``auth``: the key naming an entry, resolved even when no template reads it.
    ``connection``: keys (with a mapping ``auth``) that may only come from a keychain
    template: written in the playbook, the credentials would be stored in workflow history.
    ``within``: sub-mappings that hold their own ``auth``/``connection`` (``transfer``).
    """

    auth: str = "auth"
    connection: tuple[str, ...] = ()
    #: keys holding sub-mappings that each take ``auth``/``connection`` the same way (a
    #: transfer's ``source`` and ``target``), when their ``type`` is one of ``within_types``
    within: tuple[str, ...] = ()
    within_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolKind:
    """A kind's settings and traits (see the module docstring)."""

    kind: str
    summary: str
    settings: tuple[Setting, ...]
    #: each group: at least one of these keys (or their aliases) must be set
    required: tuple[tuple[str, ...], ...] = ()
    #: keys NoETL defines for this kind that noetl-temporal does not act on, and why: a
    #: warning, never a silent drop (a user relying on them must learn they do nothing)
    ignored: Mapping[str, str] = field(default_factory=dict)
    #: setting -> literal value -> (the service it needs that noetl-temporal does not run, the
    #: fix): a task naming one is refused at validation (NTL330), not left to fail at run time
    refused: Mapping[str, Mapping[str, tuple[str, str]]] = field(default_factory=dict)
    #: ``activity``: a registered tool run as a Temporal activity; ``workflow``: the
    #: workflow runs it itself (a child workflow for ``playbook``)
    runs_in: Literal["activity", "workflow"] = "activity"
    #: the engine completes the task in place, without a command (``noop``)
    inline: bool = False
    #: the tool reads ResultRefs itself; the activity leaves them unresolved
    reads_result_refs: bool = False
    #: the activity always prepares the keychain for it (a connection from ``auth``)
    credentials: Credentials | None = None

    def setting(self, key: str) -> Setting | None:
        """The setting ``key`` names (directly or as an alias), common ones included."""
        for setting in self.all_settings():
            if key in setting.names:
                return setting
        return None

    def all_settings(self) -> tuple[Setting, ...]:
        """The kind's settings, then the common ones it does not declare itself (``activity``
        declares its own ``args``: a list or a mapping, its call's arguments)."""
        own = {s.name for s in self.settings}
        return (*self.settings, *(s for s in COMMON if s.name not in own))

    def keys(self) -> tuple[str, ...]:
        """Every key a task of this kind may set, aliases included, in declaration order."""
        return tuple(name for s in self.all_settings() for name in s.names)


#: settings every kind takes: the engine merges ``input``/``args`` and step ``input``
#: into the task's configuration before it runs
COMMON: tuple[Setting, ...] = (
    Setting("input", ("mapping",), "named values the task reads (step `input` merged in first)"),
    Setting("args", ("mapping",), "more named values; `args` wins over `input` key by key"),
)


def value_type(value: Any) -> Type:
    """The JSON type of a value (``integer`` for whole numbers, never for booleans)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return "any"


def accepts(types: tuple[Type, ...], value: Any) -> bool:
    kind = value_type(value)
    return ("any" in types or kind in types or kind == "null"
            or (kind == "integer" and "number" in types))


def type_names(types: tuple[Type, ...]) -> str:
    return " or ".join(types)
