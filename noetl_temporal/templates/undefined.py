"""Undefined values in rendered templates: noticed, never silent.

NoETL renders a missing name as nothing (``{{ compute.totl }}`` is ``""``), and playbooks
rely on it through ``| default(...)`` and ``is defined``, which never *render* an undefined
value. What is worth telling is a template whose output is an undefined value. The
template environment calls :func:`noticed` when that happens (an undefined printed into
text, or returned as a single expression's value); :func:`current` tells it which
template and place it is rendering. Outside :func:`recording` nothing is kept and nothing
changes. Inside it, each case is recorded (the engine puts them in the task's events), or,
in strict mode, raised as ``UndefinedError``, which the renderer turns into the located
template error it gives any other undefined-value failure.

Pure and deterministic: a context variable, no clock, no I/O (the workflow renders
through it, so it is in the workflow sandbox's pass-through list).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from jinja2.exceptions import UndefinedError

__all__ = ["Undefined", "Recording", "recording", "current", "noticed"]


@dataclass(frozen=True)
class Undefined:
    """One template that rendered an undefined value."""

    name: str       # the missing name or attribute, as the template wrote it
    template: str   # the template text
    where: str | None  # the engine's place (``<step>.tool.<task>.input.x``), located by the CLI

    def message(self) -> str:
        return (f"{self.where + ': ' if self.where else ''}undefined value {self.name!r} rendered as "
                f"empty in template {_short(self.template)!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "undefined", "name": self.name, "template": _short(self.template),
                "where": self.where, "message": self.message()}


def _short(text: str, limit: int = 200) -> str:
    """Events carry the template's start: a 10 kB SQL template is not worth copying per task."""
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class Recording:
    strict: bool = False
    found: list[Undefined] = field(default_factory=list)
    template: str = ""
    where: str | None = None


_ACTIVE: ContextVar[Recording | None] = ContextVar("noetl_template_undefined", default=None)


@contextmanager
def recording(*, strict: bool = False) -> Iterator[list[Undefined]]:
    """Record (or, ``strict``, refuse) undefined values rendered inside the block."""
    active = Recording(strict=strict)
    token = _ACTIVE.set(active)
    try:
        yield active.found
    finally:
        _ACTIVE.reset(token)


def current(template: str, where: str | None) -> None:
    """The renderer starts on ``template`` at ``where`` (cheap when nothing records)."""
    active = _ACTIVE.get()
    if active is not None:
        active.template, active.where = template, where


def noticed(name: str | None) -> None:
    """An undefined value named ``name`` was rendered."""
    active = _ACTIVE.get()
    if active is None:
        return
    shown = name or "?"
    if active.strict:
        raise UndefinedError(f"{shown!r} is undefined (strict templates)")
    entry = Undefined(shown, active.template, active.where)
    if entry not in active.found:
        active.found.append(entry)
