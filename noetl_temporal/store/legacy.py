"""Event-type filters: canonical names, ``prefix.*`` and legacy NoETL names (docs/events.md, "Legacy names").

The names themselves live in :mod:`noetl_temporal.engine.event_types`, beside the
emitter; ``docs/events.md`` prints the legacy table. A legacy name maps to one or more
canonical types, optionally narrowed by ``status``.
"""

from __future__ import annotations

from ..engine.event_types import EVENT_TYPES as CANONICAL_EVENT_TYPES
from ..engine.event_types import LEGACY_EVENT_NAMES

__all__ = ["LEGACY_EVENT_NAMES", "CANONICAL_EVENT_TYPES", "expand_types"]

def expand_types(names: list[str] | None) -> tuple[set[str], dict[str, str]] | None:
    """Canonical types a filter selects, plus status narrowing per type (legacy names).

    Returns None for "no filter". Unknown names raise ValueError naming the valid ones.
    """
    if not names:
        return None
    types: set[str] = set()
    status: dict[str, str] = {}
    for name in names:
        if name in CANONICAL_EVENT_TYPES:
            types.add(name)
            status.pop(name, None)
        elif name in LEGACY_EVENT_NAMES:
            canonical, narrowing = LEGACY_EVENT_NAMES[name]
            for c in canonical:
                if narrowing and c not in types:
                    status[c] = narrowing
                types.add(c)
        elif name.endswith(".*") and any(t.startswith(name[:-1]) for t in CANONICAL_EVENT_TYPES):
            types |= {t for t in CANONICAL_EVENT_TYPES if t.startswith(name[:-1])}
        else:
            raise ValueError(f"unknown event type {name!r}; use a canonical type such as "
                             "'step.done' (see docs/events.md), a prefix such as 'task.*', "
                             "or a legacy name such as 'step.exit'")
    return types, status
