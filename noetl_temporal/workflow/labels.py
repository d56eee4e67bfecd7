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

from .search_attributes import (
    NOETL_STATE,
    PARENT_EXECUTION_ID,
    PLAYBOOK_HASH,
    PLAYBOOK_NAME,
    PLAYBOOK_PATH,
    PLAYBOOK_VERSION,
)

__all__ = ["definition_hash", "playbook_label", "playbook_version", "summary", "details", "memo",
           "search_attributes", "playbook_attributes"]

HASH_MEMO = "noetl.playbook_sha256"
VERSION_MEMO = "noetl.playbook_version"


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


def playbook_version(playbook: dict[str, Any], catalog_version: int | None = None) -> str | None:
    """The version an execution reports: the playbook's own ``metadata.version``, else the
    catalog version it was registered as, else none (docs/schedules.md, "Versions")."""
    declared = (playbook.get("metadata") or {}).get("version")
    if declared is not None and declared != "":
        return str(declared)
    return str(catalog_version) if catalog_version is not None else None


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
    shown = playbook_version(playbook, version)
    lines.append(f"**definition** sha256 `{digest[:16]}`" + (f" · version `{shown}`" if shown else "")
                 + " (pinned for this execution)")
    if parent:
        lines.append(f"**parent execution** `{parent}`")
    if api_url:
        lines.append(f"**API** [{api_url}]({api_url})")
    return "\n\n".join(lines)


def memo(playbook: dict[str, Any], source: str | None = None, *, digest: str | None = None,
         version: int | None = None) -> dict[str, Any]:
    name, path = playbook_label(playbook, source)
    out = {HASH_MEMO: digest or definition_hash(playbook), "noetl.playbook_path": path, "noetl.playbook_name": name}
    shown = playbook_version(playbook, version)
    if shown is not None:
        out[VERSION_MEMO] = shown
    return out


def playbook_attributes(playbook: dict[str, Any], source: str | None = None, *, digest: str | None = None,
                        version: int | None = None) -> list[SearchAttributePair[Any]]:
    """Name, path, version (when known) and hash of the definition: what an execution is
    pinned to, and what a schedule starts."""
    name, path = playbook_label(playbook, source)
    pairs: list[SearchAttributePair[Any]] = [SearchAttributePair(PLAYBOOK_PATH, path),
                                             SearchAttributePair(PLAYBOOK_NAME, name),
                                             SearchAttributePair(PLAYBOOK_HASH, digest or definition_hash(playbook))]
    shown = playbook_version(playbook, version)
    if shown is not None:
        pairs.append(SearchAttributePair(PLAYBOOK_VERSION, shown))
    return pairs


def search_attributes(playbook: dict[str, Any], source: str | None = None,
                      parent: str | None = None, *, digest: str | None = None, version: int | None = None,
                      pinned: bool = True) -> TypedSearchAttributes:
    """An execution's search attributes. ``pinned=False``: without the version and hash
    (a parent started where only the first four were registered: its children stay so)."""
    pairs = playbook_attributes(playbook, source, digest=digest, version=version)
    if not pinned:
        pairs = [pair for pair in pairs if pair.key in (PLAYBOOK_PATH, PLAYBOOK_NAME)]
    pairs.append(SearchAttributePair(NOETL_STATE, "PENDING"))
    if parent:
        pairs.append(SearchAttributePair(PARENT_EXECUTION_ID, parent))
    return TypedSearchAttributes(pairs)
