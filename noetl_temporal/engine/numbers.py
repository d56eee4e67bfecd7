"""Numbers NoETL 5.x lets a playbook template (``max_in_flight``, a retry rule's
``attempts``, ``delay`` and ``max_delay``): rendered once per use and checked after rendering.

A literal was checked by validation; a ``{{ }}`` string is rendered where the number is
used (a loop's ``max_in_flight`` when the loop starts, a task's retry numbers when the task
is scheduled, so every attempt of that task run sees the same numbers) and must render to a
number in range, else the step or task fails with a located template error naming the key,
what it rendered to and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dsl.models import MAX_RETRY_ATTEMPTS, MAX_RETRY_DELAY_S
from ..errors import TemplateError
from ..templates import is_template, render_value

__all__ = ["render_number", "render_retry_numbers", "RETRY_NUMBERS"]

#: a retry rule's numbers that may be templates: key -> (whole number, smallest, largest
#: allowed), the bounds a literal gets from validation (``dsl/models.py``)
RETRY_NUMBERS: Mapping[str, tuple[bool, float, float]] = {
    "attempts": (True, 1, MAX_RETRY_ATTEMPTS), "delay": (False, 0, MAX_RETRY_DELAY_S),
    "max_delay": (False, 0, MAX_RETRY_DELAY_S)}


def render_number(value: Any, context: Mapping[str, Any], where: str, *, whole: bool, minimum: float,
                  maximum: float | None = None) -> Any:
    """``value`` itself unless it is a template; else what it renders to, as a number."""
    if not is_template(value):
        return value
    rendered = render_value(value, context, where=where)
    number = _as_number(rendered, whole)
    if number is None or number < minimum or (maximum is not None and number > maximum):
        wanted = "a whole number" if whole else "a number"
        bounds = f" >= {minimum:g}" + (f" and <= {maximum:g}" if maximum is not None else "")
        raise TemplateError(f"rendered to {_shown(rendered)}, which is not {wanted}{bounds}", template=value, where=where,
                            fix="make the template render a number (`| int`, `| float`, `| default(...)`)")
    return number


def _shown(value: Any, limit: int = 80) -> str:
    """What a value rendered to, cut for a message (a huge int's repr may itself refuse)."""
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} too large to print"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _as_number(value: Any, whole: bool) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int):
        return value   # exact, however large (float() of a huge int overflows)
    if not isinstance(value, float) or value != value or value in (float("inf"), float("-inf")):
        return None
    if whole:
        return int(value) if value.is_integer() else None
    return value


def render_retry_numbers(rules: list[dict[str, Any]], context: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """``rules`` (dumped task policy rules) with the templated numbers of their ``then`` rendered."""
    out = []
    for index, rule in enumerate(rules):
        then = rule.get("then") or {}
        templated = [key for key in RETRY_NUMBERS if is_template(then.get(key))]
        if templated:
            then = dict(then)
            for key in templated:
                whole, minimum, maximum = RETRY_NUMBERS[key]
                then[key] = render_number(then[key], context, f"{where}.rules[{index}].then.{key}",
                                          whole=whole, minimum=minimum, maximum=maximum)
            rule = {**rule, "then": then}
        out.append(rule)
    return out
