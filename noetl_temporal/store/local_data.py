"""Where noetl-temporal keeps its local files by default (the local data directory).

Named apart from ``dsl/paths`` (paths inside a playbook): this one is a place on disk."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir"]


def data_dir() -> Path:
    """``$XDG_DATA_HOME/noetl-temporal`` (``~/.local/share/noetl-temporal`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "noetl-temporal"
