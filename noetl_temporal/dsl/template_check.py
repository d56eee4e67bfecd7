"""Find Jinja2 syntax errors in every template string of the source, with its position.

Checked on the raw document (not the normalized one) because every string keeps its
exact source path there; normalization does not change template syntax. Tool
settings such as ``code`` and ``command`` are rendered too, so they are checked like
any other string.
"""

from __future__ import annotations

from typing import Any

from ..templates import check_syntax, is_template
from . import paths
from .diagnostics import Reporter

__all__ = ["check_templates"]

# Go templates (`docker --format`, `kubectl -o go-template`) quote their own braces as
# {{`{{json .}}`}}; Jinja2 has no backquotes, so a shell command copied from them fails here.
_GO_QUOTE_FIX = ("{{`...`}} is Go-template quoting, not Jinja2: write the braces as a Jinja string, "
                 "{{ '{{json .}}' }}, or wrap the text in {% raw %}...{% endraw %}")


def check_templates(raw: Any, reporter: Reporter, path: str = "") -> None:
    stack: list[tuple[Any, str]] = [(raw, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if is_template(value):
                problem = check_syntax(value)
                if problem:
                    reporter.add("NTL701", f"template syntax error: {problem}", where, value=True,
                                 fix=_GO_QUOTE_FIX if "{{`" in value else None)
        elif isinstance(value, dict):
            stack.extend((v, paths.join(where, k)) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, paths.join(where, i)) for i, v in reversed(list(enumerate(value))))
