"""How a value printed by a template becomes text: the way NoETL writes it.

``cmd: "[ {{ flag }} = true ]"`` with ``flag: true`` must run ``[ true = true ]``, as under
NoETL, not ``[ True = true ]``. So when a ``{{ }}`` inside text prints a bool, ``None``, a
list or a mapping (a shell command, an http url or body string, a SQL text), it is written
as NoETL writes it (docs/semantics.md, "Values in text"):

* ``true`` / ``false`` / ``null``;
* a list or mapping as JSON (``{"a": 1, "b": [true, null]}``), keys in their order.

What NoETL writes, read from its source (noetl/noetl, noetl/cli): its CLI passes every
variable as text, a bool as ``true``/``false``, ``None`` as ``null``, anything else as JSON
(``packaging/pypi/python/noetl/__init__.py``, ``_stringify``; the local runner
``noetl/cli src/playbook_runner.rs`` writes YAML bools the same way), and its Python
renderer prints a step's mapping as JSON (``noetl/core/dsl/render.py``, ``TaskResultProxy``).

Only printing changes: a template that is one ``{{ expr }}`` still yields the native value,
and comparisons inside a template are Python's (``{{ flag == true }}``).

Executions started before this (their input lacks ``behaviours.NOETL_TEXT``) keep printing
Python's ``str()`` in the workflow, so their replay is unchanged: the engine runs each step
inside :func:`python_text` for them. A context variable, not an argument, because every
render in the engine would otherwise carry it; the engine's step is synchronous, so the
switch never leaks into another workflow's step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from jinja2 import Undefined

from . import undefined

__all__ = ["as_text", "text_of", "noetl_text_on", "python_text", "HeldPart"]

_AS_IS = frozenset({str, int, float})
_NOETL_TEXT: ContextVar[bool] = ContextVar("noetl_text", default=True)


class HeldPart:
    """A value templates read *through* that a render must not return or print as it is: a
    step result stored by reference, or a loop's results holding some (``engine/stored_results.py``;
    a mapping or a sequence). :meth:`as_value` is what a render's result holds in its place,
    :meth:`in_text` what text prints (either may raise ``ResultFieldUnavailable``: a part the
    workflow does not hold)."""

    __slots__ = ()

    def as_value(self) -> Any:
        raise NotImplementedError

    def in_text(self) -> Any:
        raise NotImplementedError


def noetl_text_on() -> bool:
    """Whether renders here print NoETL's text (else Python's ``str()``, the old way)."""
    return _NOETL_TEXT.get()


@contextmanager
def python_text(on: bool = True) -> Iterator[None]:
    """Print Python's ``str()`` inside this block when ``on`` (an execution started before
    ``behaviours.NOETL_TEXT``)."""
    if not on:
        yield
        return
    token = _NOETL_TEXT.set(False)
    try:
        yield
    finally:
        _NOETL_TEXT.reset(token)


def as_text(value: Any) -> Any:
    """What a ``{{ }}`` inside text prints for ``value``: NoETL's spelling of a bool, None,
    list or mapping; anything else (a string, a number, an undefined) as it is, for Jinja."""
    if type(value) in _AS_IS:   # most of what is printed: one set lookup
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, HeldPart):
        value = value.in_text()
    if isinstance(value, (list, tuple, Mapping)):
        return json.dumps(_plain(value), default=str)
    return value


def text_of(value: Any) -> str:
    """A native value a tool must send as text (an http header, a shell variable): the text
    a template would print for it, so ``headers: {X-On: "{{ flag }}"}`` sends ``true``."""
    if isinstance(value, str):
        return value
    out = as_text(value)
    return out if isinstance(out, str) else str(out)


def _plain(value: Any) -> Any:
    """JSON-ready: a mapping view (the engine's scopes) as a dict, an undefined as null."""
    if isinstance(value, Undefined):
        undefined.noticed(value._undefined_name)
        return None
    if isinstance(value, HeldPart):
        return _plain(value.in_text())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
