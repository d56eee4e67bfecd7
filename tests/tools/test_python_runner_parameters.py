"""The python runner reads a plain ``main``'s parameters from its code object (cheaper than
``inspect.signature`` in a freshly forked child); it must see exactly what inspect sees."""

from __future__ import annotations

import functools

import pytest

from noetl_temporal.tools.python import runner
from noetl_temporal.tools.python.runner import _call_main, _parameters_by_inspect, parameters

SOURCES = [
    "def main(): pass",
    "def main(a): pass",
    "def main(a, b=2, c=None): pass",
    "def main(a, /, b, c=3): pass",
    "def main(a=1, /, b=2): pass",
    "def main(*args): pass",
    "def main(**kwargs): pass",
    "def main(a, *args, b, c=4, **kwargs): pass",
    "def main(a, /, *, k): pass",
    "def main(*, k=None, j): pass",
    "def main(x, *rest, y=0): pass",
    "def main(p, /, q, *r, s, t=1, **u):\n    local = 1\n    return local",
    "async def main(n, *, scale=2): pass",
    "main = lambda a, b=1, *c, d, **e: None",
    "def main(a, b):\n    def inner(z): return z\n    x = y = 0\n    return inner",
]


def _main(source: str):
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace["main"]


@pytest.mark.parametrize("source", SOURCES)
def test_the_code_object_gives_what_inspect_gives(source):
    main = _main(source)
    assert parameters(main) == _parameters_by_inspect(main)


def test_wrapped_and_non_function_callables_go_through_inspect():
    def inner(a, b=2):
        return a + b

    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        return inner(*args, **kwargs)

    class Callable:
        def __call__(self, x, *, y=1):
            return x

    assert [name for name, _, _ in parameters(wrapper)] == ["a", "b"]  # follows __wrapped__, as inspect does
    assert [name for name, _, _ in parameters(Callable())] == ["x", "y"]
    assert [name for name, _, _ in parameters(functools.partial(inner, 1))] == ["b"]
    assert parameters(print) == _parameters_by_inspect(print)


@pytest.mark.parametrize("source,params,expected", [
    ("def main(a, /, b, *r, c=3, **k): return [a, b, r, c, k]", {"a": 1, "b": 2, "z": 9}, [1, 2, (), 3, {"z": 9}]),
    ("def main(a=5, /, b=6): return [a, b]", {"b": 1}, [5, 1]),
    ("def main(*, k): return k", {"k": "v", "other": 1}, "v"),
])
def test_binding(source, params, expected):
    result, err = _call_main(_main(source), params)
    assert err is None and result == expected


def test_a_missing_parameter_is_named():
    _, err = _call_main(_main("def main(a, b, *, c): pass"), {"a": 1})
    assert err["type"] == "MissingParameter" and "'b', 'c'" in err["message"]


def test_kinds_match_inspect_numbering():
    import inspect

    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
             inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
    ours = (runner.POSITIONAL_ONLY, runner.POSITIONAL_OR_KEYWORD, runner.VAR_POSITIONAL,
            runner.KEYWORD_ONLY, runner.VAR_KEYWORD)
    assert [int(k) for k in kinds] == list(ours)
