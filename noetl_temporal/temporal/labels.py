"""What the Temporal UI shows about an execution from its start: the one-line summary,
the details panel, the memo and the search attributes.

Used by the client for top-level starts and by the workflow for sub-playbooks, so both
look alike. Pure (hashlib, json), safe inside the workflow sandbox. They only read the
definition. ``digest=``: its :func:`definition_hash`, when the caller already has it (the
API keeps it with a cached playbook; hashing the dump is most of what these cost).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from temporalio.common import SearchAttributePair, TypedSearchAttributes

from .search_attributes import NOETL_STATE, PARENT_EXECUTION_ID, PLAYBOOK_NAME, PLAYBOOK_PATH

__all__ = ["definition_hash", "playbook_label", "summary", "details", "memo", "search_attributes"]

HASH_MEMO = "noetl.playbook_sha256"


def definition_hash(playbook: dict[str, Any]) -> str:
    """SHA-256 of the normalized definition the execution is pinned to (it travels in the input)."""
    return hashlib.sha256(json.dumps(playbook, sort_keys=True, separators=(",", ":"), default=str)
                          .encode()).hexdigest()


def playbook_label(playbook: dict[str, Any], source: str | None = None) -> tuple[str, str]:
    """(name, path): metadata first, then the source it was loaded from."""
    meta = playbook.get("metadata") or {}
    name = meta.get("name") or meta.get("path") or "playbook"
    path = meta.get("path") or meta.get("name") or source or "inline"
    return str(name), str(path)


def summary(playbook: dict[str, Any], source: str | None = None) -> str:
    name, path = playbook_label(playbook, source)
    return f"NoETL playbook {name}" + (f" ({path})" if path != name else "")


def details(playbook: dict[str, Any], *, source: str | None = None, version: int | None = None,
            api_url: str | None = None, parent: str | None = None, digest: str | None = None) -> str:
    """Markdown for the run page's details panel."""
    name, path = playbook_label(playbook, source)
    lines = [f"**playbook** `{name}` · path `{path}`"]
    if source:
        lines.append(f"**source** `{source}`" + (f" · catalog version {version}" if version else ""))
    digest = digest or definition_hash(playbook)
    lines.append(f"**definition** sha256 `{digest[:16]}` (pinned for this execution)")
    if parent:
        lines.append(f"**parent execution** `{parent}`")
    if api_url:
        lines.append(f"**API** [{api_url}]({api_url})")
    return "\n\n".join(lines)


def memo(playbook: dict[str, Any], source: str | None = None, *, digest: str | None = None) -> dict[str, Any]:
    name, path = playbook_label(playbook, source)
    return {HASH_MEMO: digest or definition_hash(playbook), "noetl.playbook_path": path, "noetl.playbook_name": name}


def search_attributes(playbook: dict[str, Any], source: str | None = None,
                      parent: str | None = None) -> TypedSearchAttributes:
    name, path = playbook_label(playbook, source)
    pairs = [SearchAttributePair(PLAYBOOK_PATH, path), SearchAttributePair(PLAYBOOK_NAME, name),
             SearchAttributePair(NOETL_STATE, "PENDING")]
    if parent:
        pairs.append(SearchAttributePair(PARENT_EXECUTION_ID, parent))
    return TypedSearchAttributes(pairs)
