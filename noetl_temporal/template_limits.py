"""What one template render may do: a work budget and size limits, counted, never timed.

Templates render inside the workflow (task configs, guards, ``set``, ``loop.in``), where a
render that hangs or eats memory stalls the workflow task until Temporal's deadlock
detector fails it, over and over. So a render gets:

* ``MAX_OPS`` units of work: a loop iteration costs 1, a filter 2, a call (method,
  recursive ``loop()``) 5 and a macro call 100, roughly their relative cost, so a render
  that spends the whole budget ends in well under a second on a busy 2-core machine (far
  inside Temporal's 2-second deadlock detector);
* ``MAX_SIZE`` characters (or items) for any string or list it builds or prints, checked
  *before* the allocation for the operators that multiply size (``*``, ``+``, ``%``,
  ``~``, output, ``join``/``replace``/``center``/``indent``/``format``... and the same
  ``str`` methods);
* ``MAX_INT_BITS`` bits for an integer built by ``*`` or ``**``.

Budgets are counts, not clocks, so a replay renders exactly as the first run did. The
counter lives in a thread-local: one render runs start to finish in one thread, and it is
reset when the render's Jinja context is created (see ``templates._Template``).
Jinja's own sandbox already refuses ``range()`` over 100,000 items and private attributes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import wraps
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Macro
from jinja2.utils import _PassArg

__all__ = ["MAX_OPS", "MAX_SIZE", "MAX_INT_BITS", "LimitExceeded", "start", "spend", "weight", "metered",
           "checked_join", "check_nested", "check_binop", "check_call", "guard_filters", "meter_loops", "METER_FILTER"]

MAX_OPS = 300_000
_COST_FILTER, _COST_CALL, _COST_MACRO = 2, 5, 100
MAX_SIZE = 10_000_000
MAX_INT_BITS = 100_000
METER_FILTER = "noetl_metered"

_FIX = "work on less data in the template, or compute it in a python task"


class LimitExceeded(SecurityError):
    """A render went over one of the budgets above (a ``SecurityError``: templates.render
    reports it as "not allowed in playbook templates", with where and the template)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} (fix: {_FIX})")


class _Budget(threading.local):
    ops = 0


_BUDGET = _Budget()


def start() -> None:
    _BUDGET.ops = 0


def spend(units: int = 1) -> None:
    _BUDGET.ops += units
    if _BUDGET.ops > MAX_OPS:
        raise LimitExceeded(f"the template does too much work: more than {MAX_OPS:,} units "
                            "(a loop iteration is 1, a filter 2, a call 5, a macro call 100)")


def _size(n: int) -> None:
    if n > MAX_SIZE:
        raise LimitExceeded(f"the template would build {n:,} characters or items (limit {MAX_SIZE:,})")


# Concrete types first: an isinstance check against the Mapping ABC costs ~10x more, and
# these checks run once per item of a loop's output.
_CONTAINERS = (list, tuple, set, frozenset, dict)
_FLAT = frozenset({int, float, bool, type(None)})   # print as one "item"


def _parts(item: Any) -> list[Any]:
    """The children of a container that can be bigger than one item."""
    values = (*item.keys(), *item.values()) if isinstance(item, dict | Mapping) else item
    return [v for v in values if type(v) not in _FLAT]


def weight(value: Any, limit: int = MAX_SIZE) -> int:
    """How many characters/items ``value`` prints as, stopping once past ``limit``.

    Each distinct object is measured once (a list that holds the same list twice, 80
    levels deep, prints 2**80 items but takes 80 steps to measure)."""
    sizes: dict[int, int] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, children_done = stack.pop()
        key = id(item)
        if children_done:
            parts = _parts(item)
            sizes[key] = len(item) + sum(sizes.get(id(p), 0) for p in parts)
            if sizes[key] > limit:
                return sizes[key]
        elif key not in seen:
            seen.add(key)
            if isinstance(item, str | bytes):
                sizes[key] = len(item)
            elif isinstance(item, _CONTAINERS) or isinstance(item, Mapping):
                stack.append((item, True))
                stack.extend((p, False) for p in _parts(item))
            else:
                sizes[key] = 1
    return sizes.get(id(value), 1)


def check_weight(value: Any) -> Any:
    _size(weight(value))
    return value


def check_nested(value: Any) -> Any:
    """``check_weight`` for containers only: a string or number is already as big as it got.
    (Runs once per ``{{ }}`` output: the common types leave after one set lookup.)"""
    if type(value) not in _FLAT and type(value) is not str and isinstance(value, _CONTAINERS):
        _size(weight(value))
    return value


def metered(iterable: Iterable[Any]) -> Iterable[Any]:
    """Spend one unit per item (wrapped around every ``{% for %}`` iterable), in batches
    of 1,024 (the budget counter is a thread-local: cheap, but not free per item)."""
    count = 0
    for item in iterable:
        count += 1
        if count == 1024:
            spend(count)
            count = 0
        yield item
    spend(count)


def meter_loops(template: nodes.Template) -> nodes.Template:
    """Route every ``{% for %}`` iterable through :func:`metered` (a filter node, before code generation)."""
    for loop in template.find_all(nodes.For):
        loop.iter = nodes.Filter(loop.iter, METER_FILTER, [], [], None, None, lineno=loop.iter.lineno)
    return template


def checked_join(parts: Iterable[Any]) -> str:
    """``"".join`` for template output and ``~``: stops at ``MAX_SIZE`` characters."""
    # Output chunks are mostly references to existing strings (cheap to hold): measure
    # them all, then allocate the joined string only if it fits.
    out = list(parts)
    for index, part in enumerate(out):
        if type(part) is not str:
            out[index] = str(check_weight(part))
    _size(sum(map(len, out)))
    return "".join(out)


# ---------------------------------------------------------------- operators

def _int_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise LimitExceeded(f"the template would build an integer of {bits:,} bits (limit {MAX_INT_BITS:,})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _repeat(left: Any, right: Any) -> None:
    if _is_int(left) and _is_int(right):
        _int_bits(left.bit_length() + right.bit_length())
        return
    seq, times = (left, right) if _is_int(right) else (right, left)
    if _is_int(times) and isinstance(seq, str | bytes | list | tuple) and times > 0:
        _size(weight(seq, MAX_SIZE // times + 1) * times)


def _power(base: Any, exponent: Any) -> None:
    if _is_int(base) and _is_int(exponent) and exponent > 0 and abs(base) > 1:
        _int_bits(base.bit_length() * exponent)


_PERCENT_WIDTH = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d+|\*)?(?:\.(\d+|\*))?")
_BRACE_WIDTH = re.compile(r"\{[^{}]*?:[^{}]*?(\d+|\{)[^{}]*?\}")


def check_format(fmt: str, args: Iterable[Any], pattern: re.Pattern[str] = _PERCENT_WIDTH) -> None:
    """A format string's widths (and ``*`` / nested widths taken from the arguments) and the
    size of what it prints stay within ``MAX_SIZE``."""
    args = list(args)
    widths = [w for m in pattern.finditer(fmt) for w in m.groups() if w]
    for width in widths:
        if width.isdigit():
            _size(int(width))
        else:  # '*' or a nested '{}' width: the number comes from the arguments
            for arg in args:
                if _is_int(arg):
                    _size(abs(arg))
    _size(len(fmt) + sum(weight(a) for a in args))


def check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        _repeat(left, right)
    elif operator == "**":
        _power(left, right)
    elif operator == "+" and isinstance(left, str | bytes | list | tuple):
        _size(weight(left) + weight(right))
    elif operator == "%" and isinstance(left, str):
        values = right.values() if isinstance(right, Mapping) else right if isinstance(right, tuple) else [right]
        check_format(left, values)


# ---------------------------------------------------------------- calls and filters

def _replaced(text: str, old: str, new: str, count: Any = None) -> int:
    hits = len(text) + 1 if old == "" else text.count(old)
    if _is_int(count) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * (len(new) - len(old))


def _width(value: Any) -> int:
    return value if _is_int(value) else len(str(value))


# Predicted output size of the str methods that can grow a string.
_STR_METHODS: dict[str, Callable[..., int]] = {
    "center": lambda s, width, *a: max(len(s), width),
    "ljust": lambda s, width, *a: max(len(s), width),
    "rjust": lambda s, width, *a: max(len(s), width),
    "zfill": lambda s, width: max(len(s), width),
    "expandtabs": lambda s, tabsize=8: len(s) + s.count("\t") * max(tabsize, 0),
    "replace": lambda s, old, new, count=-1: _replaced(s, old, new, count),
}


def _predicted(predict: Callable[..., int | None], *args: Any, **kwargs: Any) -> int:
    """The predicted size, or 0 when the arguments do not fit (the real call then raises
    its own, clearer, error)."""
    try:
        return predict(*args, **kwargs) or 0
    except (TypeError, ValueError, AttributeError):
        return 0


def check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Before a sandboxed call: spend a unit, predict the size of growing ``str`` methods.
    Returns the arguments to call with (a ``join`` argument is materialized to be measured)."""
    spend(_COST_MACRO if isinstance(obj, Macro) else _COST_CALL)
    inner = getattr(obj, "__wrapped__", obj)   # the sandbox wraps str.format
    owner = getattr(inner, "__self__", None)
    if not isinstance(owner, str):
        return args
    name = getattr(inner, "__name__", "")
    if name in _STR_METHODS:
        _size(_predicted(_STR_METHODS[name], owner, *args, **kwargs))
    elif name == "join" and args:
        items = list(args[0])
        _size(weight(items) + len(owner) * len(items))
        return (items, *args[1:])
    elif name in ("format", "format_map"):
        values = list(args) + list(kwargs.values())
        if name == "format_map" and args and isinstance(args[0], Mapping):
            values = list(args[0].values())
        check_format(owner, values, _BRACE_WIDTH)
    return args


def _container_size(factor: int) -> Callable[..., int | None]:
    def predict(value: Any, *args: Any, **kwargs: Any) -> int | None:
        # a scalar prints about as long as it is; only containers can hide a blow-up
        return weight(value) * factor if isinstance(value, _CONTAINERS) else None

    return predict


def _indent_size(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> int:
    text = str(check_weight(value))
    return len(text) + (text.count("\n") + 1) * _width(width)


def _format_size(value: Any, *args: Any, **kwargs: Any) -> None:
    check_format(str(value), [*args, *kwargs.values()])
    return None


# Predicted output size of the filters that can grow their input (None: nothing to check).
_FILTER_SIZES: dict[str, Callable[..., int | None]] = {
    "center": lambda value, width=80, *a, **k: max(weight(value), _width(width)),
    "indent": _indent_size,
    "replace": lambda value, old, new, count=None, *a, **k: _replaced(str(check_weight(value)), str(old),
                                                                       str(new), count),
    "slice": lambda value, slices, *a, **k: weight(value) + _width(slices),
    "format": _format_size,
    **{name: _container_size(1) for name in ("join", "string", "list", "wordwrap", "urlize")},
    **{name: _container_size(2) for name in ("tojson", "to_json", "pprint")},
}


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    skip = 1 if _PassArg.from_obj(func) is not None else 0   # a leading context/environment argument
    predict = _FILTER_SIZES.get(name)

    if predict is None:
        @wraps(func)
        def spending(*args: Any, **kwargs: Any) -> Any:
            spend(_COST_FILTER)
            return func(*args, **kwargs)

        return spending

    @wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        spend(_COST_FILTER)
        if len(args) > skip:
            _size(_predicted(predict, *args[skip:], **kwargs))
        return func(*args, **kwargs)

    return guarded


def guard_filters(filters: dict[str, Callable[..., Any]]) -> None:
    """Wrap every filter in place (each call spends a unit; growing ones are size-checked)."""
    for name, func in list(filters.items()):
        filters[name] = _guard_filter(name, func)
    filters[METER_FILTER] = metered
