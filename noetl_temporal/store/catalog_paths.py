"""What a catalog path may be, and why a given one is not.

A catalog path names a playbook in URLs (``GET /catalog/team/daily``), in Temporal
visibility queries and, for sub-playbooks, wherever a path is resolved; a deployment may
also mirror the catalog onto files. So it must never climb (``..``), be absolute, hold
empty or dot segments (``a//b``, ``a/./b``: one playbook under several names) or
characters that mean something elsewhere (backslashes, control characters, quotes, spaces).

One leading ``/`` is NoETL's way of writing a catalog path (``metadata.path:
/vars_test/api_test``, a sub-playbook's ``path: /vars_test/api_test``): it names the catalog's
root, so :func:`canonical_path` drops it and ``/a/b`` is the playbook ``a/b``
(docs/migrating-from-noetl.md). It never means a file system root here.

The rule is one pattern built from segments, with no lookaround, so pydantic (whose regex
engine has none) checks the very same pattern in the API's models and its OpenAPI
document; :func:`path_problem` says in words which part of it a path breaks.
"""

from __future__ import annotations

import re

__all__ = ["PATH_PATTERN", "MAX_PATH_CHARS", "path_problem", "canonical_path"]

#: one segment: starts with a letter, digit or '_', and never holds two dots in a row or
#: ends with one (so neither '.', '..' nor 'a..b' can appear)
_SEGMENT = r"[A-Za-z0-9_](?:\.?[A-Za-z0-9_\-])*"
#: what a catalog path may look like: segments joined by single slashes
PATH_PATTERN = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"
MAX_PATH_CHARS = 200
_PATH_RE = re.compile(PATH_PATTERN)
_ALLOWED = re.compile(r"[A-Za-z0-9_.\-/]")

#: what a path must look like, for every message that refuses one
RULE = ("use segments of letters, digits, '_', '-' and single dots, each starting with a "
        f"letter, digit or '_', joined by single '/' (up to {MAX_PATH_CHARS} characters), e.g. team/daily_load")


def canonical_path(path: str) -> str:
    """``path`` as the catalog stores it: NoETL's one leading ``/`` (the catalog root) dropped.
    Two or more stay, so ``//a`` is still refused for its empty segment."""
    return path[1:] if path.startswith("/") and not path.startswith("//") else path


def path_problem(path: str) -> str | None:
    """None when ``path`` is a valid catalog path, else what is wrong with it, in words."""
    if len(path) <= MAX_PATH_CHARS and _PATH_RE.match(path):
        return None
    return _first_reason(path)


def _first_reason(path: str) -> str:
    shown = repr(path[:80])
    if not path:
        return "the catalog path is empty"
    if len(path) > MAX_PATH_CHARS:
        return f"catalog path {shown}... is longer than {MAX_PATH_CHARS} characters"
    if path.startswith("/"):
        return f"catalog path {shown} is absolute (starts with '/')"
    if ".." in path:
        return f"catalog path {shown} contains '..'"
    if "\\" in path:
        return f"catalog path {shown} contains a backslash"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return f"catalog path {shown} contains a control character"
    bad = next((ch for ch in path if not _ALLOWED.match(ch)), None)
    if bad is not None:
        return f"catalog path {shown} contains {bad!r}, which a catalog path cannot hold"
    if "//" in path or path.endswith("/"):
        return f"catalog path {shown} has an empty segment"
    return f"catalog path {shown} has a segment that starts with '.' or '-', or ends with '.'"
