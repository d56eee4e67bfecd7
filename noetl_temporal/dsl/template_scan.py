"""Parse each distinct template expression once while a playbook is checked.

A large playbook repeats the same expressions with different text around them
(``echo {{ ctx.a }} 17``) or different numbers inside (``{{ ctx.x == 17 }}``). Parsing
every template whole with Jinja cost 0.3 ms each, twice (syntax, then names): most of
the time of validating a 5 MB playbook (docs/performance.md). A template made only of
text and ``{{ expression }}`` blocks is instead cut into its expressions, numbers in them
are replaced by ``0`` (a number's value changes neither the syntax nor the names read),
and each distinct expression is parsed once and remembered.

Only shapes whose cutting is certain to match Jinja's own lexer take this path; anything
else (statements, comments, whitespace control, braces inside an expression) is parsed
whole as before, and so is any template with a syntax error, so the message and its line
are Jinja's own.
"""

from __future__ import annotations

import re
from functools import lru_cache

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

from ..templates import check_syntax, operations_in, operations_in_tree

__all__ = ["expressions", "operations", "parse_expression", "syntax_problem"]

_BLOCK = re.compile(r"\{\{([^{}]*)\}\}")
# whole numbers Jinja reads as decimal integers (not 007, 1_000, 0x1F, or the 1 of s1)
_NUMBER = re.compile(r"\b(?:[1-9][0-9]*|0)\b")
_TAG_OPENER = re.compile(r"\{[{%#]")
_WHITESPACE_CONTROL = ("-", "+")
_PARSER = Environment()  # syntax only: a sandbox's filters and limits do not change parsing


#: longer texts are not remembered: the caches live as long as the process (an API server)
_CACHED_CHARS = 4096


def expressions(text: str) -> tuple[str, ...] | None:
    """The expressions of a template of only text and ``{{ ... }}`` blocks, numbers made 0;
    None when the template has any other shape (then it must be parsed whole)."""
    # each template is cut twice: for its syntax, then for its names
    return _cut_cached(text) if len(text) <= _CACHED_CHARS else _cut(text)


def _cut(text: str) -> tuple[str, ...] | None:
    pieces = _BLOCK.split(text)   # text, expression, text, ..., text: cut in C, once
    if len(pieces) == 1:
        return None
    last = len(pieces) - 1
    for index in range(0, len(pieces), 2):
        data = pieces[index]
        # any other tag opener makes the shape uncertain; "{{{ x }}": Jinja's block starts
        # one brace earlier than the match
        if "{" in data and (_TAG_OPENER.search(data) is not None or (data.endswith("{") and index < last)):
            return None
    found: list[str] = []
    for expr in pieces[1::2]:
        if expr.startswith(_WHITESPACE_CONTROL) or expr.endswith(_WHITESPACE_CONTROL):
            return None
        # inside quotes a digit is text (ctx['1'] reads the field "1"): keep such an expression as is
        found.append(expr if "'" in expr or '"' in expr else _NUMBER.sub("0", expr))
    return tuple(found)


# perf: cutting the same template text again (templates repeat across steps) — benchmark: probes.validate_speed
_cut_cached = lru_cache(maxsize=16384)(_cut)


def parse_expression(expr: str) -> nodes.Template | None:
    """The parse tree of ``{{ expr }}``, or None when it is not valid Jinja."""
    return _parse_cached(expr) if len(expr) <= _CACHED_CHARS else _parse(expr)


def _parse(expr: str) -> nodes.Template | None:
    try:
        return _PARSER.parse("{{" + expr + "}}")
    except TemplateSyntaxError:
        return None


# perf: a Jinja parse per template (each distinct expression once) — benchmark: probes.validate_speed
_parse_cached = lru_cache(maxsize=16384)(_parse)


def syntax_problem(text: str) -> str | None:
    """The syntax error message of a template (as ``templates.check_syntax``), or None."""
    parts = expressions(text)
    if parts is not None and all(parse_expression(part) is not None for part in parts):
        return None
    return check_syntax(text)  # the whole text: Jinja's message at the template's own line


def operations(text: str) -> frozenset[tuple[str, str]]:
    """The filters and tests a template uses (as ``templates.operations_in``), read from the
    parse of each distinct expression: a filter's or test's name does not depend on the
    numbers or text around it. Parsing every template whole for this check alone was half
    the time of validating a large playbook (issue 39)."""
    parts = expressions(text)
    if parts is None or any(parse_expression(part) is None for part in parts):
        return operations_in(text)
    return frozenset().union(*(_operations_of(part) for part in parts))


def _operations_of(expr: str) -> frozenset[tuple[str, str]]:
    return _operations_cached(expr) if len(expr) <= _CACHED_CHARS else _operations(expr)


def _operations(expr: str) -> frozenset[tuple[str, str]]:
    tree = parse_expression(expr)
    return operations_in_tree(tree) if tree is not None else frozenset()


# perf: NTL706 parsing every template whole (8.79 -> 5.80 s at 5 MB) — benchmark: probes.validate_speed
_operations_cached = lru_cache(maxsize=16384)(_operations)
