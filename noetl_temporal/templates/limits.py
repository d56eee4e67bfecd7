"""What one template render may do: a work budget and size limits, counted, never timed.

Templates render inside the workflow, where a render that hangs or eats memory stalls the
workflow task until Temporal's deadlock detector fails it, over and over. So a render gets
``MAX_OPS`` units of work (filters pay for the items they touch *before* they run, so the
budget bounds memory as well as time), ``MAX_SIZE`` for any one string or list it builds
(checked before the allocation), ``MAX_RENDER_SIZE`` for all of them, ``MAX_INT_BITS`` for
an integer, and the templates of one value share ``MAX_VALUE_SIZE`` (:class:`ValueBudget`).
Counts, not clocks, so a replay renders as the first run did. The counter is a
thread-local, reset when the render's Jinja context is created (``templates._Template``).
See docs/durability.md#limits (each limit's value, what it counts and its error).
"""

from __future__ import annotations

import math
import operator
import re
import string
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import wraps
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Macro
from jinja2.utils import _PassArg

__all__ = ["MAX_OPS", "MAX_SIZE", "MAX_RENDER_SIZE", "MAX_VALUE_SIZE", "MAX_CTX_SIZE", "MAX_INT_BITS", "CHARS_PER_UNIT",
           "ValueBudget", "LimitExceeded", "start", "spend", "weight", "metered",
           "checked_join", "check_nested", "check_result", "check_binop", "check_int", "check_call", "check_called",
           "check_compare", "check_slice", "sliced", "compare", "COMPARE_ONE", "guard_filters", "guard_tests", "meter_loops",
           "METER_FILTER"]

MAX_OPS = 1_000_000
_COST_FILTER, _COST_CALL, _COST_MACRO = 5, 10, 100
CHARS_PER_UNIT = 256     # C-speed text work (upper, escape, tojson...): ~1 unit per 256 characters
MAX_SIZE = 10_000_000
MAX_RENDER_SIZE = 30_000_000
MAX_VALUE_SIZE = 20_000_000
MAX_CTX_SIZE = 40_000_000     # one execution's ctx, all keys together (engine/ctx_size.py)
MAX_INT_BITS = 14_000    # ~4,214 decimal digits: str() of it works (Python refuses over 4,300)
METER_FILTER = "noetl_metered"
_FORMATTER = string.Formatter()

_FIX = "work on less data in the template, or compute it in a python task"


class LimitExceeded(SecurityError):
    """A render went over one of the budgets above (a ``SecurityError``: templates.render
    reports it as "not allowed in playbook templates", with where and the template)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} (fix: {_FIX})")


class _Budget(threading.local):
    ops = 0
    built = 0


_BUDGET = _Budget()


def start() -> None:
    _BUDGET.ops = 0
    _BUDGET.built = 0


def spend(units: int = 1) -> None:
    _BUDGET.ops += units
    if _BUDGET.ops > MAX_OPS:
        raise LimitExceeded(f"the template does too much work: more than {MAX_OPS:,} units (limit MAX_OPS; "
                            "a loop iteration or an item is 1, a filter 5, a call 10, a macro call 100)")


def _size(n: int) -> None:
    """One value of ``n`` characters/items is about to be built: within ``MAX_SIZE``, and
    within what is left of the render's ``MAX_RENDER_SIZE``."""
    if n > MAX_SIZE:
        raise LimitExceeded(f"the template would build {n:,} characters or items (limit {MAX_SIZE:,}, MAX_SIZE)")
    _BUDGET.built += n
    if _BUDGET.built > MAX_RENDER_SIZE:
        raise LimitExceeded(f"the template builds more than {MAX_RENDER_SIZE:,} characters or items in all "
                            "(limit MAX_RENDER_SIZE)")


def _items(value: Any) -> int:
    """The items a filter or method touches: a sized container's length, a string's length
    in units (``CHARS_PER_UNIT`` characters), nothing for a scalar or a generator (a
    generator's items are paid for as they are produced)."""
    if isinstance(value, str | bytes):
        return len(value) // CHARS_PER_UNIT
    try:
        return len(value)
    except TypeError:
        return 0


class ValueBudget:
    """What all the templates of one value (a task's config, ``args``, ``set``) hold together:
    each rendered result's size is added as soon as it exists, so the sum stops at
    ``MAX_VALUE_SIZE`` plus one render's worth, never twenty renders' worth."""

    def __init__(self) -> None:
        self.total = 0

    def add(self, value: Any) -> Any:
        if type(value) in _FLAT:
            return value
        self.total += weight(value, MAX_VALUE_SIZE + 1, paid=False)
        if self.total > MAX_VALUE_SIZE:
            raise LimitExceeded(f"the templates of this value build more than {MAX_VALUE_SIZE:,} characters "
                                "or items together (limit MAX_VALUE_SIZE)")
        return value


_TEXT = str | bytes | bytearray

# Concrete types first: an isinstance check against the Mapping ABC costs ~10x more, and
# these checks run once per item of a loop's output.
_CONTAINERS = (list, tuple, set, frozenset, dict)
_FLAT = frozenset({int, float, bool, type(None)})   # print as one "item"


def weight(value: Any, limit: int = MAX_SIZE, chars_per_item: int = 1, paid: bool = True) -> int:
    """How many characters/items ``value`` prints as, stopping once past ``limit``
    (with ``chars_per_item``: its strings count one item per that many characters).

    Each distinct container is measured once (a list that holds the same list twice, 80
    levels deep, prints 2**80 items but takes 80 steps to measure). Inside a render
    (``paid``) the walk itself spends a unit per item it looks at."""
    if type(value) is str or type(value) is bytes:
        return len(value) // chars_per_item
    if isinstance(value, str | bytes | bytearray):   # Markup (``|safe``) is a str too: its length counts
        return len(value) // chars_per_item
    if not (isinstance(value, _CONTAINERS) or isinstance(value, Mapping)):
        return 1
    sizes: dict[int, int] = {}
    own: dict[int, int] = {}
    stack: list[tuple[Any, list[Any] | None]] = [(value, None)]
    looked = 0
    while stack:
        item, nested = stack.pop()
        key = id(item)
        if nested is not None:   # its nested containers are measured
            sizes[key] = own[key] + sum(sizes.get(id(c), 0) for c in nested)
            if sizes[key] > limit:
                return sizes[key]
            continue
        if key in own:
            continue
        # One pass over the children: strings and scalars are summed here (the common
        # rows-of-scalars case needs no stack), only nested containers are pushed.
        total, inner = len(item), []
        for child in (*item.keys(), *item.values()) if isinstance(item, Mapping) else item:
            kind = type(child)
            if kind is str or kind is bytes:
                total += len(child) // chars_per_item
            elif kind not in _FLAT:
                if isinstance(child, _CONTAINERS) or isinstance(child, Mapping):
                    inner.append(child)
                elif isinstance(child, str | bytes | bytearray):
                    total += len(child) // chars_per_item
                else:
                    total += 1
        own[key] = total
        looked += len(item)
        if paid and looked >= 1024:
            spend(looked)
            looked = 0
        if inner:
            stack.append((item, inner))
            stack.extend((c, None) for c in inner)
        else:
            sizes[key] = total
            if total > limit:
                return total
    if paid:
        spend(looked)
    return sizes.get(id(value), 0)


def check_weight(value: Any) -> Any:
    _size(weight(value))
    return value


def check_nested(value: Any) -> Any:
    """``check_weight`` for containers only: a string or number is already as big as it got.
    (Runs once per ``{{ }}`` output: the common types leave after one set lookup.) Measuring
    and printing a container is work too: it is paid like a filter, plus its items."""
    if type(value) not in _FLAT and type(value) is not str and isinstance(value, _CONTAINERS):
        spend(_COST_FILTER)
        _size(weight(value))
    return value


def _text(value: Any) -> str:
    """``str(value)`` for a filter that works on text, paid for first when ``value`` is a
    container (printing 100,000 rows is real work, and its size is checked)."""
    if isinstance(value, str):
        return value
    if isinstance(value, _CONTAINERS) or isinstance(value, Mapping):
        spend(4 * weight(value, MAX_OPS + 1, CHARS_PER_UNIT))
    return str(check_weight(value))


def check_result(value: Any) -> Any:
    """What a ``{{ expr }}`` returns: a generator (``map``, ``select``...) becomes the list it
    yields, paid for inside the render (it must not run later, outside the budget)."""
    if isinstance(value, Iterator):
        value = list(value)
    return check_nested(value)


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
        raise LimitExceeded(f"the template would build an integer of {bits:,} bits (limit {MAX_INT_BITS:,} "
                            "bits, MAX_INT_BITS: about 4,200 decimal digits)")


def check_int(value: Any) -> Any:
    """``value``, refused when it is an integer of more than ``MAX_INT_BITS`` bits."""
    if type(value) is int and value.bit_length() > MAX_INT_BITS:
        raise LimitExceeded(f"the template would build an integer of {value.bit_length():,} bits (limit "
                            f"{MAX_INT_BITS:,} bits, MAX_INT_BITS: about 4,200 decimal digits)")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _repeat(left: Any, right: Any) -> None:
    if _is_int(left) and _is_int(right):
        _int_bits(left.bit_length() + right.bit_length())
        return
    seq, times = (left, right) if _is_int(right) else (right, left)
    if _is_int(times) and isinstance(seq, str | bytes | list | tuple) and times > 0:
        _size(weight(seq, MAX_SIZE // times + 1) * times)
        spend(_items(seq) * times)


def _power(base: Any, exponent: Any) -> None:
    if _is_int(base) and _is_int(exponent) and exponent > 0 and abs(base) > 1:
        # exactly how many bits the power has (bit_length() * exponent overshoots: 10**4000
        # has 13,288 bits, not 16,000); capped first so a huge exponent cannot overflow a float
        _int_bits(base.bit_length() * exponent if exponent > MAX_INT_BITS else math.ceil(exponent * math.log2(abs(base))))


# One ``%`` conversion (``%%`` included: its type is ``%``) with its width and precision.
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d+|\*)?(?:\.(\d+|\*))?[hlL]?(.)", re.DOTALL)
_NUMBER = re.compile(r"\d+")


def _printed(value: Any) -> int:
    """At most how many characters ``value`` prints as in a format (``str``/``repr``): a
    container's repr adds quotes and separators (4 per item is generous), bytes may escape
    each byte as ``\\xNN``."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, bytes | bytearray):
        return 4 * len(value) + 3
    if _is_int(value):
        return value.bit_length() // 3 + 2
    if isinstance(value, _CONTAINERS) or isinstance(value, Mapping):
        return 4 * weight(value, MAX_SIZE + 1) + 2
    return 64   # floats, None, booleans, undefined: short


def _field_size(widths: Iterable[str], widest: int, args: list[Any]) -> int:
    """One replacement field: the widest argument plus every width and precision it names
    (a precision after a width counts too: ``{:1.1500000000f}``); a ``*`` or nested ``{}``
    takes its number from the arguments, so the largest integer argument counts."""
    size = widest
    for width in widths:
        if width.isdigit():
            size += int(width)
        else:
            size += max((abs(a) for a in args if _is_int(a)), default=0)
    return size


def _percent_size(fmt: str, args: list[Any]) -> int:
    widest = max((_printed(a) for a in args), default=0)
    size = len(fmt)
    for match in _PERCENT_FIELD.finditer(fmt):
        if match.group(3) != "%":
            size += _field_size((w for w in match.groups()[:2] if w), widest, args)
        if size > MAX_SIZE:
            break
    return size


def _brace_size(fmt: str, args: list[Any]) -> int:
    """``str.format``: each field prints one argument, however often it repeats
    (``'{0}' * 1000``), plus its widths and precisions."""
    widest = max((_printed(a) for a in args), default=0)
    size = len(fmt)
    try:
        fields = [(name, spec or "") for _, name, spec, _ in _FORMATTER.parse(fmt) if name is not None]
    except ValueError:   # malformed: str.format raises its own error
        return size
    for _, spec in fields:
        widths = _NUMBER.findall(spec) + (["{"] if "{" in spec else [])
        size += _field_size(widths, widest, args)
        if size > MAX_SIZE:
            break
    return size


def check_format(fmt: str, args: Iterable[Any], brace: bool = False) -> None:
    """What a ``%`` or ``format`` would print stays within ``MAX_SIZE``: checked before it is built."""
    values = list(args)
    _size((_brace_size if brace else _percent_size)(fmt, values))
    spend(len(fmt) // CHARS_PER_UNIT + len(values))


def check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        _repeat(left, right)
    elif operator == "**":
        _power(left, right)
    elif operator == "+" and isinstance(left, str | bytes | list | tuple):
        _size(weight(left) + weight(right))
        spend(_items(left) + _items(right))
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
    "translate": lambda s, table, *a: _translated(s, table),
    "encode": lambda s, encoding="utf-8", *a, **k: (4 if str(encoding).lower().replace("-", "") in ("utf8", "")
                                                    else 10) * len(s),
    "decode": lambda s, *a, **k: 4 * len(s),     # backslashreplace writes \\xNN per byte
    "hex": lambda s, *a, **k: 3 * len(s),
}


def _translated(text: Any, table: Any) -> int:
    """``str.translate`` maps each character to a string of any length (bytes: one byte)."""
    if not isinstance(text, str):
        return len(text)
    values = table.values() if isinstance(table, Mapping) else table if isinstance(table, list | tuple) else ()
    longest = max((len(v) for v in values if isinstance(v, str)), default=1)
    return len(text) * max(longest, 1)


def _predicted(predict: Callable[..., int | None], *args: Any, **kwargs: Any) -> int:
    """The predicted size, or 0 when the arguments do not fit (the real call then raises
    its own, clearer, error)."""
    try:
        return predict(*args, **kwargs) or 0
    except (TypeError, ValueError, AttributeError):
        return 0


def _pieces(text: str, sep: Any = None, maxsplit: Any = -1) -> int:
    """How many strings ``split``/``rsplit`` would build."""
    if isinstance(sep, str) and sep:
        hits = text.count(sep)
    else:   # whitespace: at most one piece per run of blanks
        hits = sum(text.count(c) for c in " \t\n\r\x0b\x0c")
    return min(hits, maxsplit) + 1 if _is_int(maxsplit) and maxsplit >= 0 else hits + 1


# Predicted number of items the str methods that split build.
_STR_PIECES: dict[str, Callable[..., int]] = {
    "split": _pieces,
    "rsplit": _pieces,
    "splitlines": lambda s, *a: s.count("\n") + s.count("\r") + 1,
}


def check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Before a sandboxed call: spend a unit, predict the size of growing ``str`` methods
    and pay for the text they read and the pieces they build.
    Returns the arguments to call with (a ``join`` argument is materialized to be measured)."""
    spend(_COST_MACRO if isinstance(obj, Macro) else _COST_CALL)
    inner = getattr(obj, "__wrapped__", obj)   # the sandbox wraps str.format
    owner = getattr(inner, "__self__", None)
    if not isinstance(owner, _TEXT):
        return args
    spend(_items(owner))
    name = getattr(inner, "__name__", "")
    if name in _STR_METHODS:
        _size(_predicted(_STR_METHODS[name], owner, *args, **kwargs))
    elif name in _STR_PIECES:
        spend(_predicted(_STR_PIECES[name], owner, *args, **kwargs))
    elif name == "join" and args:
        items = list(args[0])
        spend(len(items))
        _size(weight(items) + len(owner) * len(items))
        return (items, *args[1:])
    elif name in ("format", "format_map") and isinstance(owner, str):
        values = list(args) + list(kwargs.values())
        if name == "format_map" and args and isinstance(args[0], Mapping):
            values = list(args[0].values())
        check_format(owner, values, brace=True)
    return args


def check_called(obj: Any, result: Any) -> Any:
    """After a call: what a ``str``/``bytes`` method built counts in the render's sizes, so a
    method no prediction covers (``casefold`` can triple a string) is bounded in total too."""
    owner = getattr(getattr(obj, "__wrapped__", obj), "__self__", None)
    if isinstance(owner, _TEXT) and isinstance(result, _TEXT | list | tuple):
        _size(len(result))
    return check_int(result)


def _units(value: Any) -> int:
    """What comparing against ``value`` may read: a string's length in units, a container's
    items and text (walked and paid for), nothing for a scalar."""
    if type(value) in _FLAT:
        return 0
    if isinstance(value, _TEXT):
        return len(value) // CHARS_PER_UNIT
    if isinstance(value, _CONTAINERS) or isinstance(value, Mapping):
        return weight(value, MAX_OPS + 1, CHARS_PER_UNIT)
    return 0


def check_compare(op: str, left: Any, right: Any) -> None:
    """Comparisons are paid for by what they read: ``==`` of two 9 MB strings is a memcmp of
    9 MB, ``in`` on a list compares the key with every item (each comparison reading at
    most the key). A hashed ``in`` (mapping, set) reads only the key."""
    if op in ("in", "notin"):
        if isinstance(right, list | tuple):
            spend(len(right) * (1 + _units(left)))
        elif isinstance(right, _TEXT):
            spend(len(right) // CHARS_PER_UNIT)
        elif isinstance(right, Mapping | set | frozenset):
            spend(_units(left))
    elif isinstance(left, _TEXT) and isinstance(right, _TEXT):
        spend(min(len(left), len(right)) // CHARS_PER_UNIT)
    elif isinstance(left, _CONTAINERS) and isinstance(right, _CONTAINERS):
        spend(min(_units(left), _units(right)))


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "lteq": operator.le, "gt": operator.gt,
    "gteq": operator.ge, "in": lambda a, b: a in b, "notin": lambda a, b: a not in b,
}


def _one_comparison(op: str) -> Callable[[Any, Any], Any]:
    fn = _COMPARE[op]

    def compare_one(left: Any, right: Any) -> Any:
        if type(left) not in _FLAT or type(right) not in _FLAT:   # two numbers: nothing to pay
            check_compare(op, left, right)
        return fn(left, right)

    return compare_one


#: ``a == b`` (one operator, the common case) compiles to a call of one of these
COMPARE_ONE: dict[str, Callable[[Any, Any], Any]] = {op: _one_comparison(op) for op in _COMPARE}


def compare(left: Any, *pairs: Any) -> Any:
    """``left op1 right1 op2 right2 ...`` as Python chains it (each pair paid for first)."""
    result: Any = True
    for index in range(0, len(pairs), 2):
        op, right = pairs[index], pairs[index + 1]
        if type(left) not in _FLAT or type(right) not in _FLAT:   # two numbers: nothing to pay
            check_compare(op, left, right)
        result = _COMPARE[op](left, right)
        if not result:
            return result
        left = right
    return result


def check_slice(obj: Any, argument: slice) -> None:
    """``s[i:]`` copies: its size counts like any value the render builds (a slice in a
    loop reached 1.4 GB), and copying a long string is paid for."""
    if isinstance(obj, _TEXT | list | tuple):
        try:
            count = len(range(*argument.indices(len(obj))))
        except (TypeError, ValueError):
            return   # the subscript itself raises its own error
        _size(count)
        spend(count // CHARS_PER_UNIT if isinstance(obj, _TEXT) else count)


def sliced(obj: Any, start: Any, stop: Any, step: Any) -> Any:
    """``obj[start:stop:step]`` from a template."""
    argument = slice(start, stop, step)
    check_slice(obj, argument)
    return obj[argument]


def _container_size(factor: int) -> Callable[..., int | None]:
    def predict(value: Any, *args: Any, **kwargs: Any) -> int | None:
        # a scalar prints about as long as it is; only containers can hide a blow-up
        return weight(value) * factor if isinstance(value, _CONTAINERS) else None

    return predict


def _indent_size(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> int:
    text = _text(value)
    return len(text) + (text.count("\n") + 1) * _width(width)


def _format_size(value: Any, *args: Any, **kwargs: Any) -> None:
    check_format(str(value), [*args, *kwargs.values()])
    return None


def _batch_size(value: Any, linecount: Any, fill_with: Any = None) -> int:
    # the last batch is padded to ``linecount`` items when there is a fill value
    return weight(value) + (_width(linecount) if fill_with is not None else 0)


def _wrapped_size(value: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None,
                  *args: Any, **kwargs: Any) -> int:
    text = _text(value)
    lines = len(text) // max(_width(width), 1) + text.count("\n") + 1
    return len(text) + lines * len(wrapstring if isinstance(wrapstring, str) else "\n")


def _escaped_size(value: Any, *args: Any, **kwargs: Any) -> int:
    text = _text(value)
    return len(text) + 5 * sum(text.count(c) for c in "<>&'\"")   # &#34; is the longest escape


# Predicted output size of the filters that can grow their input (None: nothing to check).
_FILTER_SIZES: dict[str, Callable[..., int | None]] = {
    "center": lambda value, width=80, *a, **k: max(weight(value), _width(width)),
    "indent": _indent_size,
    "replace": lambda value, old, new, count=None, *a, **k: _replaced(_text(value), str(old),
                                                                       str(new), count),
    "slice": lambda value, slices, *a, **k: weight(value) + _width(slices),
    "batch": _batch_size,
    "wordwrap": _wrapped_size,
    "format": _format_size,
    **{name: _escaped_size for name in ("e", "escape", "forceescape")},
    "urlencode": lambda value, *a, **k: 3 * weight(value),    # %XX per character at most
    # (not `list`: it makes no item its input did not have, and pays _each per item)
    "join": lambda value, d="", *a, **k: _joined_size(value, d),
    **{name: _container_size(1) for name in ("string", "urlize")},
    "sum": lambda value, attribute=None, start=0: weight(value) if isinstance(start, list | tuple) else None,
    "tojson": lambda value, indent=None, *a, **k: _json_size(value, indent),
    **{name: lambda value, *a, **k: 2 * weight(value) for name in ("to_json", "pprint")},
}


def _joined_size(value: Any, separator: Any) -> int:
    """``join``: the items, plus the separator once between each two (``range(150) |
    join('x' * 9000000)`` is 1.35 GB of separators)."""
    count = len(value) if isinstance(value, _TEXT) or isinstance(value, _CONTAINERS) else 0
    return weight(value) + _printed(separator) * max(count - 1, 0)


def _depth(value: Any) -> int:
    """How deeply containers nest in ``value`` (each container looked at once; paid by the
    filter's work, which walks the same items)."""
    deepest, stack, seen = 0, [(value, 1)], set()
    while stack:
        item, level = stack.pop()
        if id(item) in seen or not (isinstance(item, _CONTAINERS) or isinstance(item, Mapping)):
            continue
        seen.add(id(item))
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in (item.values() if isinstance(item, Mapping) else item))
    return deepest


def _json_size(value: Any, indent: Any) -> int:
    """``tojson(indent=n)`` writes each item on its own line, indented ``n`` per level."""
    size = 2 * weight(value)
    if indent is None or isinstance(value, _TEXT) or type(value) in _FLAT:
        return size
    step = len(indent) if isinstance(indent, str) else max(indent, 0) if _is_int(indent) else 0
    return size + (weight(value) + 1) * (step * _depth(value) + 1)


def _sorting(value: Any, *args: Any, **kwargs: Any) -> int:
    # a string sorts its characters, each a Python object with a key call: not C-speed text
    n = _each(value)
    return n * max(n.bit_length(), 1) // 4    # n log n comparisons, a few per unit


def _words(value: Any, *args: Any, **kwargs: Any) -> int:
    """Filters that do Python work per word (textwrap, title's regex callback, urlize)."""
    text = _text(value)
    return 2 * sum(text.count(c) for c in " \t\n") + len(text) // max(_width(args[0]) if args else 1, 1) \
        + len(text) // CHARS_PER_UNIT


def _nested(value: Any, *args: Any, **kwargs: Any) -> int:
    """Filters that walk all of a nested value (serializers): a few units per item."""
    if type(value) in _FLAT or isinstance(value, str | bytes):
        return _items(value)
    return 4 * weight(value, MAX_OPS + 1, CHARS_PER_UNIT)


def _each(value: Any, *args: Any, **kwargs: Any) -> int:
    """Filters that take their input item by item: a string is one item per character."""
    return len(value) if isinstance(value, str | bytes) else _items(value)




def _sum_work(value: Any, attribute: Any = None, start: Any = 0) -> int:
    """``sum`` of lists or tuples copies the running total at each step: quadratic."""
    n = _each(value)
    if isinstance(start, list | tuple):
        return n + n * weight(value, MAX_OPS + 1) // 2
    return n


# The filters whose work does not grow with their input (they read one item or a length).
_CONSTANT_WORK = frozenset({"abs", "attr", "count", "length", "d", "default", "first", "last", "float", "int",
                            "round", "safe", "filesizeformat", "bool"})

# The work a filter does before it returns, by its input; any other filter pays ``_items``.
_FILTER_WORK: dict[str, Callable[..., int]] = {
    "sort": _sorting,
    "dictsort": lambda value, *a, **k: _sorting(value) + 4 * _items(value),
    "groupby": lambda value, *a, **k: _sorting(value) + 8 * _each(value),   # a tuple and a list per group
    "unique": lambda value, *a, **k: 2 * _each(value),
    "slice": lambda value, slices=1, *a, **k: _each(value) + max(_width(slices), 0),
    "batch": lambda value, linecount=1, fill_with=None, *a, **k: _each(value) + (
        max(_width(linecount), 0) if fill_with is not None else 0),
    "wordwrap": _words,
    "title": lambda value, *a, **k: _words(value),
    "wordcount": lambda value, *a, **k: _words(value),
    "urlize": lambda value, *a, **k: _words(value),
    **{name: _nested for name in ("tojson", "to_json", "pprint", "string", "format", "xmlattr",
                                  "fromjson", "from_json", "b64encode", "b64decode", "items")},
    "sum": _sum_work,
    **{name: _each for name in ("list", "join", "max", "min", "map", "select", "reject", "selectattr",
                                "rejectattr")},
}


def _work(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    if name in _CONSTANT_WORK or not args:
        return 0
    counter = _FILTER_WORK.get(name)
    return _predicted(counter, *args, **kwargs) if counter is not None else _items(args[0])


# Filters that need all of their input at once: a generator is made a list first, so its
# size can be predicted (``join`` over a ``map`` built a 100,000,000-character string).
_WHOLE_INPUT = frozenset({"join", "tojson", "to_json", "pprint", "string", "sum", "format", "xmlattr"})


def _lazy(value: Any) -> bool:
    """An iterable whose size is only known once iterated (a generator, ``range``)."""
    return isinstance(value, Iterator | range)


# Filters that look an attribute up on every item: a long attribute name is read (hashed,
# copied into an error) once per item.
_PER_ITEM_ARGS = frozenset({"sort", "unique", "groupby", "selectattr", "rejectattr", "map", "join", "sum",
                            "min", "max", "dictsort", "select", "reject"})


def _argument_work(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    if name not in _PER_ITEM_ARGS:
        return 0
    text = sum(len(a) for a in (*args[1:], *kwargs.values()) if isinstance(a, str)) // CHARS_PER_UNIT
    return text * (_each(args[0]) + 1) if text else 0


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    skip = 1 if _PassArg.from_obj(func) is not None else 0   # a leading context/environment argument
    predict = _FILTER_SIZES.get(name)

    @wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        work = _COST_FILTER
        if len(args) > skip:
            if type(args[skip]) not in _FLAT:   # a number touches no items (the common case, fast)
                if name in _WHOLE_INPUT and _lazy(args[skip]):
                    # a generator's items are measured before they are joined or serialized
                    args = (*args[:skip], list(args[skip]), *args[skip + 1:])
                work += _work(name, args[skip:], kwargs) + _argument_work(name, args[skip:], kwargs)
            spend(work)      # paid before the filter runs
            if predict is not None:
                _size(_predicted(predict, *args[skip:], **kwargs))
        else:
            spend(work)
        result = func(*args, **kwargs)
        kind = type(result)
        if kind is int:
            return check_int(result)
        if kind is str:
            if predict is None:
                _size(len(result))   # bounded by its input; counted in what the render built
            return result
        if kind in _FLAT or kind in _CONTAINERS:
            return result
        if isinstance(result, _TEXT):   # Markup (``safe``, ``escape``...): a string all the same
            _size(len(result))
            return result
        # a generator (map, select, batch, slice, unique, reverse...) pays per item it yields
        return metered(result) if isinstance(result, Iterator) else result

    return guarded


# Tests that read one value or a length, whatever its size.
_CONSTANT_TESTS = frozenset({"boolean", "callable", "defined", "divisibleby", "escaped", "even", "false", "filter",
                             "float", "integer", "iterable", "mapping", "none", "number", "odd", "sameas",
                             "sequence", "string", "test", "true", "undefined"})
_COMPARE_TESTS = {"eq": "eq", "equalto": "eq", "==": "eq", "ne": "ne", "!=": "ne", "lt": "lt", "lessthan": "lt",
                  "<": "lt", "le": "lteq", "<=": "lteq", "gt": "gt", "greaterthan": "gt", ">": "gt",
                  "ge": "gteq", ">=": "gteq", "in": "in"}


def _guard_test(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)
    def guarded(value: Any, *args: Any, **kwargs: Any) -> Any:
        if name in _COMPARE_TESTS and args:
            check_compare(_COMPARE_TESTS[name], value, args[0])
        elif name not in _CONSTANT_TESTS and type(value) not in _FLAT:
            # ``is lower`` reads every character, at Python's per-character speed
            spend(_items(value) * (8 if isinstance(value, _TEXT) else 1))
        return func(value, *args, **kwargs)

    return guarded


def guard_tests(tests: Any) -> None:
    """Wrap every test in place: a test pays for what it reads, like a comparison."""
    for name, func in list(tests.items()):
        tests[name] = _guard_test(name, func)


def guard_filters(filters: dict[str, Callable[..., Any]]) -> None:
    """Wrap every filter in place (each call spends units by the work it will do; growing
    ones are size-checked; generators are metered)."""
    for name, func in list(filters.items()):
        filters[name] = _guard_filter(name, func)
    filters[METER_FILTER] = metered
