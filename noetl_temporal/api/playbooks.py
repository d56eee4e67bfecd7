"""The playbook a start request names, loaded once per content: ``load_for_start``.

Loading a playbook was the largest part of the API's CPU per start, and clients start the
same one again and again, so a load is kept under the text's SHA-256 and its label, with
what a start derives from it alone (:class:`StartPlaybook`: the definition, its digest, the
expanded size); a hit skips the thread pool too, and concurrent requests for one text wait
for one load. An invalid playbook is not kept (each request gets its own 422). An entry is
shared by every request that hits it, so nothing on the start path may change it (none
does: ``tests/api/test_playbook_cache.py``); it is neither copied (a deep copy costs what the
dump it saves did) nor frozen (Temporal's JSON encoder writes a ``MappingProxyType`` as its
keys). Bounded by entries and summed text length, least recently used first out; a text
over an eighth of that budget is loaded every time.
See docs/performance.md#starting-executions-through-the-api-issue-30 (what it saves).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from fastapi.concurrency import run_in_threadpool

from noetl_temporal.dsl import LoadedPlaybook, load_playbook_text
from noetl_temporal.dsl.models import Playbook, playbook_definition
from noetl_temporal.workflow.labels import definition_hash

from .limits import expanded_size

__all__ = ["PlaybookCache", "StartPlaybook", "load_for_start", "prepare"]

MAX_ENTRIES = 128
# Summed over the entries. A loaded playbook takes about 40 times its text (57 KiB for the
# 1.5 KB of examples/hello.yaml; its definition adds 4 KiB), so the cache holds about 40 MiB
# at most.
MAX_TEXT_CHARS = 1 << 20


@dataclass(frozen=True, slots=True)
class StartPlaybook:
    """A valid playbook and what starting it needs, derived once from its text."""

    loaded: LoadedPlaybook
    #: ``playbook_definition(loaded.playbook)``: the workflow input's playbook (read only)
    definition: dict[str, Any]
    #: ``labels.definition_hash(definition)``: the memo's and the details' pin
    digest: str
    #: ``expanded_size(loaded.raw, cap)``, ``cap`` the cache's ``measure_up_to``
    expanded: int

    @property
    def playbook(self) -> Playbook:
        return self.loaded.playbook


def prepare(text: str, label: str, measure_up_to: int) -> StartPlaybook:
    """Load ``text`` (``PlaybookInvalid`` as the loader raises it) and derive what a start needs."""
    loaded = load_playbook_text(text, label)
    definition = playbook_definition(loaded.playbook)
    return StartPlaybook(loaded=loaded, definition=definition, digest=definition_hash(definition),
                         expanded=expanded_size(loaded.raw, measure_up_to))


# perf: loading a playbook per start (3.5 ms of the API's CPU) — benchmark: api
class PlaybookCache:
    """Start playbooks by (SHA-256 of the text, label); for one event loop (no locks).

    ``measure_up_to``: how far a playbook's expanded size is counted, at least the largest
    limit it is checked against (``EXPANSION * max_body_bytes``: beyond, only "more" matters).
    """

    def __init__(self, measure_up_to: int, max_entries: int = MAX_ENTRIES, max_chars: int = MAX_TEXT_CHARS) -> None:
        self.measure_up_to = measure_up_to
        self.max_entries, self.max_chars = max_entries, max_chars
        self._entries: OrderedDict[tuple[str, str], tuple[int, StartPlaybook]] = OrderedDict()
        self._chars = 0
        self.loading: dict[tuple[str, str], asyncio.Future[StartPlaybook | None]] = {}

    def get(self, key: tuple[str, str]) -> StartPlaybook | None:
        hit = self._entries.get(key)
        if hit is None:
            return None
        self._entries.move_to_end(key)
        return hit[1]

    def put(self, key: tuple[str, str], size: int, loaded: StartPlaybook) -> None:
        if size * 8 > self.max_chars or key in self._entries:
            return
        self._entries[key] = (size, loaded)
        self._chars += size
        while len(self._entries) > self.max_entries or self._chars > self.max_chars:
            _, (gone, _) = self._entries.popitem(last=False)
            self._chars -= gone

    def __len__(self) -> int:
        return len(self._entries)


async def load_for_start(cache: PlaybookCache, text: str, label: str) -> StartPlaybook:
    """``prepare(text, label, ...)``, from ``cache`` when this text was loaded before (a miss
    loads in the thread pool: a large playbook must not stall the event loop).
    Raises ``PlaybookInvalid`` as the loader does."""
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), label)
    loaded = cache.get(key)
    if loaded is not None:
        return loaded
    pending = cache.loading.get(key)
    if pending is not None:
        loaded = await asyncio.shield(pending)  # one waiter's cancellation must not cancel the others'
        if loaded is not None:
            return loaded
        return await run_in_threadpool(prepare, text, label, cache.measure_up_to)  # it failed: our own error
    done: asyncio.Future[StartPlaybook | None] = asyncio.get_running_loop().create_future()
    cache.loading[key] = done
    try:
        loaded = await run_in_threadpool(prepare, text, label, cache.measure_up_to)
        cache.put(key, len(text), loaded)
        return loaded
    finally:
        del cache.loading[key]
        done.set_result(loaded)
