"""Located diagnostics and the collector every validation pass writes into.

A :class:`Diagnostic` is what a user reads: where (file, line, column, JSON path),
what (a stable code and a message) and how to fix it. Passes do not compute line and
column themselves: they report a path and the :class:`Reporter` looks the position up
in the loader's position map, walking up to the nearest enclosing node that exists in
the source (a missing key is reported at the mapping that should hold it).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from . import paths
from .codes import CODES

__all__ = ["Diagnostic", "Reporter", "Severity", "did_you_mean", "kind_of"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One problem. ``path`` is the JSON path as written in the source file (a single-object
    ``tool`` is ``tool``, not ``tool[0]``); ``line``/``col`` are 1-based, None when unknown."""

    code: str
    severity: Severity
    message: str
    path: str = ""
    line: int | None = None
    col: int | None = None
    file: str | None = None
    fix: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def location(self) -> str:
        where = self.file or "<string>"
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return where

    def __str__(self) -> str:
        text = f"{self.location()}: {self.code} {self.message}"
        if self.path:
            text += f" ({self.path})"
        if self.fix:
            text += f" — fix: {self.fix}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Position = tuple[int, int]


_KINDS = {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "integer", float: "number"}


def kind_of(value: object) -> str:
    """A YAML user's name for the type of ``value`` ("mapping", "string", "null" ...)."""
    if value is None:
        return "null"
    return _KINDS.get(type(value), type(value).__name__)


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    if not isinstance(name, str):
        return ""
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


@dataclass
class Reporter:
    """Collects diagnostics for one source, locating each by its path.

    ``positions`` maps a source path to the (line, col) of its key (or list item);
    ``value_positions`` to the start of its value. ``resolve`` turns a path of the
    *normalized* document into the source path it came from (identity by default).
    """

    source: str | None = None
    positions: Mapping[str, Position] = field(default_factory=dict)
    value_positions: Mapping[str, Position] = field(default_factory=dict)
    resolve: Callable[[str], str] = paths.identity
    items: list[Diagnostic] = field(default_factory=list)
    #: (path, text) of every template string value of the source, when the parser listed
    #: them (``yaml_loader.Parsed.templates``): lets later passes skip walking the document
    templates: list[tuple[str, str]] | None = None

    def locate(self, path: str, *, value: bool = False) -> tuple[str, Position | None]:
        """The nearest existing source path at or above ``path`` and its position."""
        table = self.value_positions if value else self.positions
        current: str | None = path
        while current is not None:
            if current in table:
                return current, table[current]
            if current in self.positions:
                return current, self.positions[current]
            try:
                current = paths.parent(current)
            except ValueError:
                current = None
        return path, None

    def add(self, code: str, message: str, path: str = "", *, fix: str | None = None,
            severity: Severity | None = None, value: bool = False,
            line: int | None = None, col: int | None = None) -> Diagnostic:
        entry = CODES[code]
        _, pos = self.locate(path, value=value)
        if line is None and pos is not None:
            line, col = pos
        diag = Diagnostic(code=code, severity=severity or entry.severity, message=message, path=path,
                          line=line, col=col, file=self.source, fix=fix if fix is not None else entry.fix)
        self.items.append(diag)
        return diag

    def add_normalized(self, code: str, message: str, norm_path: str, **kw: Any) -> Diagnostic:
        """Report at a path of the normalized document (mapped back to the source)."""
        return self.add(code, message, self.resolve(norm_path), **kw)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if not d.is_error]

    def has_errors(self, besides: frozenset[str] = frozenset()) -> bool:
        """Any error reported, not counting those whose code is in ``besides``."""
        return any(d.is_error and d.code not in besides for d in self.items)
