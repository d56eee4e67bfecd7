"""NoETL's step envelope ``data``: ``{{ step.data }}`` reads as NoETL reads it.

NoETL's templates see a step's result through a proxy (``TaskResultProxy`` in NoETL's
``noetl/core/dsl/render.py``) whose attribute ``data`` is the result's own ``data`` key
when it has one, and else the result itself; every mapping read below it is proxied the
same way (a list is not, nor what is read from it). So NoETL's playbooks write
``{{ load.data.command_0.rows }}`` and ``{{ load.command_0.rows }}`` for the same rows, and a
result ``{"data": 1}`` reads ``{{ step.data }}`` as ``1``, its own key.

:class:`EnvelopeLayer` gives step results that alias in the template scope: a mapping
result is seen as an :class:`EnvelopeView`, which reads like the dict it wraps, adds
``data`` where the dict has none, and renders or leaves a template as that dict (a
:class:`~noetl_temporal.templates.HeldPart`). ``'data' in step`` and ``step.get('data')``
stay the dict's own, as NoETL's proxy answers them.

Only executions listing ``behaviours.STEP_ENVELOPE_DATA`` see it (``common.template_context``);
before, ``{{ step.data }}`` of a result without that key was undefined. docs/semantics.md,
"NoETL's step envelope".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..templates import HeldPart

__all__ = ["EnvelopeView", "EnvelopeLayer", "ALIAS"]

#: the attribute NoETL's proxy answers with the result itself
ALIAS = "data"


def _viewed(value: Any) -> Any:
    return EnvelopeView(value) if type(value) is dict else value


class EnvelopeView(HeldPart, Mapping[str, Any]):
    """A step result (or a mapping inside one) with NoETL's ``data`` alias."""

    __slots__ = ("_inner",)

    def __init__(self, inner: dict[str, Any]) -> None:
        self._inner = inner

    def __getitem__(self, key: Any) -> Any:
        try:
            value = self._inner[key]
        except KeyError:
            if key == ALIAS:
                return self     # no `data` of its own: NoETL's envelope data is the result
            raise
        return _viewed(value)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._inner.get(key, default)    # NoETL's proxy: the dict's own `get`

    def __contains__(self, key: object) -> bool:
        return key in self._inner

    def __iter__(self) -> Iterator[str]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)

    def __eq__(self, other: object) -> bool:
        return self._inner == (other._inner if isinstance(other, EnvelopeView) else other)

    __hash__ = None  # type: ignore[assignment]  # a dict's view: unhashable as the dict

    def as_value(self) -> Any:
        return self._inner

    in_text = as_value


class EnvelopeLayer(Mapping[str, Any]):
    """The step-results layer of the template scope, each mapping result seen as an
    :class:`EnvelopeView` (a stored result's or a loop's view is left as it is)."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Mapping[str, Any]) -> None:
        self._inner = inner

    def __getitem__(self, key: str) -> Any:
        return _viewed(self._inner[key])

    def __contains__(self, key: object) -> bool:
        return key in self._inner

    def __iter__(self) -> Iterator[str]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)
