"""Execution ids people can read in the Temporal UI: ``<playbook-name>-<short id>``.

The id is the Temporal workflow id and the execution id everywhere (CLI, API, event
store), so it stays a plain token: lowercase letters, digits and ``-``, no ``/`` (which
would not fit in an API path segment). The short id keeps it unique: random for a new
execution, derived from the parent's id and the task for a sub-playbook, so the same
task of the same parent always names the same child (a retried start finds it).
"""

from __future__ import annotations

import hashlib
import re
import uuid

__all__ = ["slug", "new_execution_id", "child_execution_id", "MAX_SLUG"]

MAX_SLUG = 40   # the whole id stays short enough to read in the UI's list
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug(name: str | None) -> str:
    """``"Examples/Hello World_v2"`` -> ``"hello-world-v2"``: the last path part, lowercased."""
    base = (name or "").strip().rstrip("/").rsplit("/", 1)[-1]
    text = _NOT_SLUG.sub("-", base.lower()).strip("-")[:MAX_SLUG].rstrip("-")
    return text or "playbook"


def new_execution_id(name: str | None = None) -> str:
    return f"{slug(name)}-{uuid.uuid4().hex[:12]}"


def child_execution_id(parent_execution_id: str, task_run_id: str, child_name: str | None) -> str:
    """A sub-playbook's id: deterministic (the workflow computes it), unique per parent task."""
    digest = hashlib.sha256(f"{parent_execution_id}/{task_run_id}".encode()).hexdigest()[:12]
    return f"{slug(child_name)}-{digest}"
