"""The playbook language front end: load, normalize and validate NoETL v10 playbooks.

``load_playbook(path)`` / ``load_playbook_text(text)`` return a :class:`LoadedPlaybook`
whose ``.playbook`` is the normalized :class:`~.models.Playbook` the engine runs, or
raise :class:`~noetl_temporal.errors.PlaybookInvalid` with every located diagnostic.
``validate_text`` returns the diagnostics without raising (for CLIs and editors), and
``playbook_json_schema`` is the JSON Schema of the *source* form users write.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .diagnostics import Diagnostic
    from .loader import LoadedPlaybook, load_playbook, load_playbook_text, validate_file, validate_text
    from .models import Playbook
    from .schema import playbook_json_schema

__all__ = [
    "Diagnostic",
    "LoadedPlaybook",
    "Playbook",
    "load_playbook",
    "load_playbook_text",
    "playbook_json_schema",
    "validate_file",
    "validate_text",
]

# Loaded on first use: a worker imports ``dsl.models`` (the engine runs it) but never
# parses YAML, so importing a submodule must not bring in the loader (PyYAML, its C
# extension) or the JSON Schema builder: about 1 MiB of a worker's resident set.
# (tests/hosting/test_worker_imports.py checks it.)
_WHERE = {
    "Diagnostic": "diagnostics", "Playbook": "models", "playbook_json_schema": "schema",
    "LoadedPlaybook": "loader", "load_playbook": "loader", "load_playbook_text": "loader",
    "validate_file": "loader", "validate_text": "loader",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # once: later lookups skip this function
    return value
