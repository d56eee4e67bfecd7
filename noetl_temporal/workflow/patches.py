"""``workflow.patched`` ids of the playbook workflow: interpreter changes that would replay
differently on histories recorded before them (docs/deployment.md, "Upgrading workers").

Never reuse an id. Engine behaviour changes are named in ``engine/behaviours.py`` and
listed in the workflow input instead.
"""

from __future__ import annotations

__all__ = ["PATCH_READABLE_CHILD_IDS", "PATCH_BATCHED_EVENT_FLUSH", "PATCH_LOCATED_CHILD_ERRORS"]

PATCH_READABLE_CHILD_IDS = "readable-child-ids"   # sub-playbook ids `<child>-<hash>`, not `<parent>/<task>`
PATCH_BATCHED_EVENT_FLUSH = "noetl-batched-event-flush"   # events persisted in batches, not per step
PATCH_LOCATED_CHILD_ERRORS = "located-child-errors"   # a sub-playbook not found names its task: `<step>.tool.<task>.path: `
