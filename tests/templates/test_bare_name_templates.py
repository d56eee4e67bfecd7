"""``{{ name }}`` is answered without a Jinja render (templates._bare_name): the value, the
limits and the errors are the ones Jinja's evaluation gives."""

from __future__ import annotations

import pytest

from noetl_temporal import templates
from noetl_temporal.templates import TemplateError, render


def _by_jinja(text: str, context: dict) -> object:
    expr = templates._single_expression(text)
    assert expr is not None
    return templates._native(templates._compile_expr(expr)(**templates._scope_for(text, context, None, None)))


@pytest.mark.parametrize("text, make, fast", [
    ("{{ i }}", lambda: {"i": 3}, True),
    ("{{i}}", lambda: {"i": [1, {"a": None}]}, True),
    ("  {{\n item \n}} ", lambda: {"item": {"k": "v"}}, True),
    ("{{ loop }}", lambda: {"loop": 7}, True),
    ("{{ range }}", lambda: {"range": "mine"}, True),     # the caller's name shadows the global
    ("{{ gen }}", lambda: {"gen": iter([1, 2])}, True),   # a generator is listed, as Jinja's result is
    ("{{ true }}", lambda: {"true": 7}, False),           # a constant to Jinja, never looked up
    ("{{ none }}", lambda: {"none": 7}, False),
    ("{{ missing }}", lambda: {"other": 1}, False),
    ("{{ i + 1 }}", lambda: {"i": 1}, False),
])
def test_a_bare_name_renders_as_jinja_evaluates_it(monkeypatch, text, make, fast):
    expected = _by_jinja(text, make())
    if fast:   # Jinja is not asked
        monkeypatch.setattr(templates, "_compile_expr", lambda expr: pytest.fail(f"rendered {expr!r} by Jinja"))
    assert render(text, make()) == expected


def test_self_still_fails():
    with pytest.raises(TemplateError):
        render("{{ self }}", {"self": 1})    # Jinja's own argument: an error, as before


def test_a_bare_name_is_held_to_the_size_limit(monkeypatch):
    monkeypatch.setattr(templates.limits, "MAX_SIZE", 10)
    with pytest.raises(TemplateError, match="MAX_SIZE"):
        render("{{ rows }}", {"rows": list(range(100))})
