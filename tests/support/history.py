"""Payloads in a Temporal history, read from its JSON form (``WorkflowHistory.to_json``)."""

from __future__ import annotations

import base64
from typing import Any

__all__ = ["CLAIM_CHECK", "payloads", "encoding", "claim_check_keys"]

#: the encoding of a payload the claim-check codec moved to the payload store
CLAIM_CHECK = b"noetl/claim-check"


def payloads(node: Any, out: list[dict] | None = None) -> list[dict]:
    """Every payload (``{"metadata": {...}, "data": base64}``) of the history JSON."""
    out = [] if out is None else out
    if isinstance(node, dict):
        if "data" in node and "metadata" in node and isinstance(node["data"], str):
            out.append(node)
        for value in node.values():
            payloads(value, out)
    elif isinstance(node, list):
        for value in node:
            payloads(value, out)
    return out


def encoding(payload: dict) -> bytes:
    return base64.b64decode((payload.get("metadata") or {}).get("encoding", ""))


def claim_check_keys(history_json: Any) -> set[str]:
    """The payload-store keys a history refers to."""
    return {base64.b64decode(p["data"]).decode() for p in payloads(history_json) if encoding(p) == CLAIM_CHECK}
