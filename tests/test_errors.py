"""The one exception tree: every exception class of the package is drawn in
``noetl_temporal/errors.py``'s docstring under its real base, derives from ``NoetlError``,
or is one of the few deliberate outsiders listed (and explained) there too."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import noetl_temporal
from noetl_temporal import errors
from noetl_temporal.errors import NoetlError

#: exception classes outside ``NoetlError`` on purpose: qualified name -> the base it needs
OUTSIDERS = {
    "noetl_temporal.templates.limits.LimitExceeded": "jinja2.exceptions.SecurityError",
    "noetl_temporal.dsl.yaml_loader._Stop": "Exception",
    "noetl_temporal.tools.base._NotPlain": "Exception",
    "noetl_temporal.dsl.yaml_loader._Unusual": "Exception",
    "noetl_temporal.tools.shell._ForkUnavailable": "Exception",
    "noetl_temporal.tools.transfer._Cancelled": "Exception",
}

def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(noetl_temporal.__path__, "noetl_temporal."):
        if info.name.endswith("__main__"):
            continue  # runs the command line when imported
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def _drawn_tree() -> dict[str, str | None]:
    """Each class of the docstring's drawing -> its parent in the drawing."""
    doc = errors.__doc__ or ""
    drawing = doc.split("::", 1)[1].split("\n\n", 2)[1]
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in drawing.splitlines():
        start = re.search(r"\w", line)
        assert start, f"unreadable line in the errors.py drawing: {line!r}"
        depth = (start.start() - 4) // 4  # the drawing is indented by four spaces, a level by four more
        name = re.match(r"\w+", line[start.start():])[0]  # type: ignore[index]
        del stack[depth:]
        parents[name] = stack[-1] if stack else None
        stack.append(name)
    return parents


def test_every_exception_class_is_a_noetl_error_or_a_listed_outsider():
    strays = sorted(name for name, cls in _exception_classes().items()
                    if not issubclass(cls, NoetlError) and name not in OUTSIDERS)
    assert not strays, (f"{strays} derive from neither NoetlError nor an outsider of tests/test_errors.py; "
                        "derive them from NoetlError (or explain why not in errors.py and OUTSIDERS)")


def test_the_outsiders_exist_with_their_bases_and_are_explained():
    classes = _exception_classes()
    for name, base in OUTSIDERS.items():
        assert name in classes, f"{name} is gone: remove it from OUTSIDERS and errors.py"
        bases = {f"{b.__module__}.{b.__qualname__}".removeprefix("builtins.") for b in classes[name].__mro__[1:]}
        assert base in bases, f"{name} no longer derives from {base}"
        assert classes[name].__qualname__ in (errors.__doc__ or ""), f"errors.py does not explain {name}"


def test_the_drawing_in_errors_py_is_the_tree():
    drawn = _drawn_tree()
    real = {cls.__name__: cls for cls in _exception_classes().values() if issubclass(cls, NoetlError)}
    assert set(drawn) == set(real), (f"drawn but not defined: {sorted(set(drawn) - set(real))}; "
                                     f"defined but not drawn: {sorted(set(real) - set(drawn))}")
    for name, parent in drawn.items():
        base = real[name].__mro__[1]
        assert (base.__name__ if name != "NoetlError" else None) == parent, (
            f"errors.py draws {name} under {parent}, but it derives from {base.__name__}")
