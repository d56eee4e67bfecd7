"""The playbook a workflow runs, rebuilt from its input once per worker.

Every activation that builds a workflow (its first, and every rebuild: a query to an
evicted or closed workflow, a worker restart, a cache eviction) turns the JSON definition
in the input into a validated playbook and analyses its step graph. For a 10,000-step
playbook that is a quarter of a million objects and, in a worker's large heap, a full
garbage collection, inside one activation that Temporal's deadlock detector cuts at 2 s.

So it is done once per definition and worker: with the collector paused, and kept in a
small cache keyed by the definition's digest, shared by every execution (and every
rebuild) of that playbook. Sharing is replay safe: a playbook and its graph are immutable
values of the definition (the graph's one mutable part is a memo of pure look-ups), so a
hit and a miss give the same engine behaviour. Under the workflow sandbox (on request) this
module is imported per run and the cache only serves that run.

Unsandboxed, the build runs on a thread of its own that the activation waits for. On a
loaded machine a 10,000-step definition can take more than the detector's 2 s, and the
detector interrupts the activation's thread: built there, the build died with it, the
retried task started it again and the run never got past its first activation. On its own
thread the build finishes, the cache keeps it, and the retried task finds it. A CLI run
builds it before it starts the run (``client/end_to_end.py``), so its first activation does not.
"""

from __future__ import annotations

import concurrent.futures
import gc
import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from ..dsl.models import Playbook, playbook_from_definition
from ..engine.graph import StepGraph
from ..engine.machine import step_graph

__all__ = ["prepare_playbook", "invalid_input", "CACHED_PLAYBOOKS"]

# Distinct playbooks a worker keeps analysed (an entry of a 10,000-step playbook is tens of MB).
CACHED_PLAYBOOKS = 8

# perf: validating and analysing a playbook per workflow run (once per worker) — benchmark: benchmarks.first_activation
_cache: OrderedDict[str, tuple[Playbook, StepGraph]] = OrderedDict()
_lock = threading.Lock()   # unsandboxed workflows of one worker activate on several threads
_building: dict[str, concurrent.futures.Future[tuple[Playbook, StepGraph]]] = {}
_pool: concurrent.futures.ThreadPoolExecutor | None = None   # (made on first use: _builder)


def prepare_playbook(definition: dict[str, Any]) -> tuple[Playbook, StepGraph]:
    """The validated playbook of a workflow input's definition and its analysed graph."""
    key = _digest(definition)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
        if workflow.unsafe.in_sandbox():
            building = None
        else:   # one build per definition, on the builder's thread (a rebuild may wait on it)
            building = _building.get(key)
            if building is None:
                building = _building[key] = _builder().submit(_build, key, definition)
    return building.result() if building is not None else _build(key, definition)


def _build(key: str, definition: dict[str, Any]) -> tuple[Playbook, StepGraph]:
    enabled = gc.isenabled()
    gc.disable()   # (see playbook_from_definition: collections in a big heap cost more than the work)
    try:
        playbook = playbook_from_definition(definition)
        prepared = (playbook, step_graph(playbook).analyse())
        _promote_to_oldest()
    except BaseException:
        with _lock:
            _building.pop(key, None)
        raise
    finally:
        if enabled:
            gc.enable()
    with _lock:
        _cache[key] = prepared
        _building.pop(key, None)
        while len(_cache) > CACHED_PLAYBOOKS:
            _cache.popitem(last=False)
    return prepared


def _builder() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="noetl_playbooks_")
    return _pool


def _promote_to_oldest() -> None:
    """Move every tracked object to the collector's oldest generation without traversing it.

    The new playbook's objects would otherwise be traversed by a young collection right
    after the collector is enabled again, again by the middle one, and count towards the
    full collection a quarter of the oldest generation's size triggers: a second or more
    in a worker's heap, inside this activation. They live as long as the cache keeps them,
    so the oldest generation is where they belong; cyclic garbage that happens to be young
    now is collected by the next full collection instead of a young one.
    """
    if gc.get_freeze_count():   # the process froze objects itself (a pre-fork server): leave them
        return
    gc.freeze()     # all tracked objects to the permanent generation ...
    gc.unfreeze()   # ... and back, into the oldest one


def _digest(definition: dict[str, Any]) -> str:
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def invalid_input(execution_id: str, exc: Exception) -> ApplicationError:
    """The non-retryable failure of an execution whose input holds no valid definition (a raw
    YAML mapping, a hand-made input): what is wrong, where in the definition, and the fix."""
    errors = getattr(exc, "errors", None)
    if callable(errors):   # pydantic: each error at its place in the definition
        items = errors()
        shown = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ())) or '(top)'}: {e.get('msg')}"
                          for e in items[:5])
        more = f" (and {len(items) - 5} more)" if len(items) > 5 else ""
    else:
        shown, more = f"{type(exc).__name__}: {exc}", ""
    return ApplicationError(
        f"execution {execution_id}: its input holds no valid playbook definition: {shown}{more}. "
        "Start playbooks with noetl_temporal.start_execution, or from a workflow with "
        "noetl_temporal.workflow.execute_playbook: both load and validate the playbook first",
        type="PlaybookInvalid", non_retryable=True)
