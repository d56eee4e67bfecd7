"""Find Jinja2 syntax errors in every template string of the source, with its position,
and templates that read ``keychain`` where secrets are not allowed (NTL704).

Secrets render only inside a task's activity, in its tool settings (``keychain.prepare``);
anywhere else (``set``, ``args``, ``when``, ``loop.in``, ``workload``) the workflow renders
the template without them and it silently became null.

Checked on the raw document (not the normalized one) because every string keeps its
exact source path there; normalization does not change template syntax. Tool
settings such as ``code`` and ``command`` are rendered too, so they are checked like
any other string.
"""

from __future__ import annotations

import re
from typing import Any

from ..templates import is_template, reads_name
from . import paths
from .diagnostics import Reporter
from .template_scan import syntax_problem

__all__ = ["check_templates"]

# Go templates (`docker --format`, `kubectl -o go-template`) quote their own braces as
# {{`{{json .}}`}}; Jinja2 has no backquotes, so a shell command copied from them fails here.
_GO_QUOTE_FIX = ("{{`...`}} is Go-template quoting, not Jinja2: write the braces as a Jinja string, "
                 "{{ '{{json .}}' }}, or wrap the text in {% raw %}...{% endraw %}")

_reads_keychain = reads_name("keychain")
_SEGMENT = re.compile(r"[^.\[\]]+")
# Under a tool, these are rendered by the workflow (task policies, set, guards), not the activity.
_WORKFLOW_SIDE = frozenset({"set", "set_ctx", "set_iter", "set_vars", "when", "spec", "policy", "next"})


def _secrets_allowed(where: str) -> bool:
    segments = _SEGMENT.findall(where)
    if segments[:1] == ["keychain"]:
        return True   # the declarations themselves
    if "tool" not in segments:
        return False
    return not _WORKFLOW_SIDE.intersection(segments[segments.index("tool") + 1:])


def check_templates(raw: Any, reporter: Reporter, path: str = "",
                    templates: list[tuple[str, str]] | None = None) -> None:
    """Check every template of ``raw``; ``templates``: the (path, text) of each, when the
    parser already listed them (then the document is not walked again)."""
    if templates is not None:
        for where, value in templates:
            _check_one(value, where, reporter)
        return
    # A string's path is built only when it is a template: most strings of a large
    # playbook are not, and joining a path for each was a fifth of this pass.
    stack: list[tuple[Any, str, str | int | None]] = [(raw, path, None)]
    while stack:
        value, parent, key = stack.pop()
        if isinstance(value, str):
            if is_template(value):
                _check_one(value, parent if key is None else paths.join(parent, key), reporter)
            continue
        where = parent if key is None else paths.join(parent, key)
        if isinstance(value, dict):
            stack.extend((v, where, k) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, where, i) for i, v in reversed(list(enumerate(value))))


def _check_one(value: str, where: str, reporter: Reporter) -> None:
    problem = syntax_problem(value)
    if problem:
        reporter.add("NTL701", f"template syntax error: {problem}", where, value=True,
                     fix=_GO_QUOTE_FIX if "{{`" in value else None)
    elif _reads_keychain(value) and not _secrets_allowed(where):
        reporter.add("NTL704", "this template reads `keychain`, which only a task's tool settings "
                               "may do: here it would render as null", where, value=True)
