"""``prepare_playbook``: a workflow input's playbook is validated and its graph analysed
once per worker, then shared by every execution and rebuild of the same definition
(pure: no server)."""

from __future__ import annotations

import copy
import gc

from benchmarks.engine_scale import fanout
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.dsl.models import playbook_definition
from noetl_temporal.engine.graph import StepGraph
from noetl_temporal.workflow import definitions


def _definition(n: int) -> dict:
    return playbook_definition(load_playbook_text(fanout(n, "noop")).playbook)


def test_equal_definitions_share_one_analysed_playbook_and_others_do_not():
    first = _definition(12)
    playbook, graph = definitions.prepare_playbook(first)
    assert "join_upstreams" in vars(graph) and "back_edges" in vars(graph)   # analysed already
    assert graph.join_upstreams["join"] == frozenset(f"b{i}" for i in range(10))
    again = definitions.prepare_playbook(copy.deepcopy(first))   # a rebuild decodes its own copy
    assert again[0] is playbook and again[1] is graph
    other = definitions.prepare_playbook(_definition(13))
    assert other[0] is not playbook and len(other[1].join_upstreams["join"]) == 11
    fresh = StepGraph(other[0], "start")
    assert fresh.join_upstreams == other[1].join_upstreams and fresh.back_edges == other[1].back_edges


def test_the_cache_is_bounded_and_the_collector_is_left_as_found():
    for n in range(20, 20 + definitions.CACHED_PLAYBOOKS + 3):
        definitions.prepare_playbook(_definition(n))
    assert len(definitions._cache) == definitions.CACHED_PLAYBOOKS
    assert gc.isenabled()
    gc.disable()
    try:
        definitions.prepare_playbook(_definition(40))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_objects_the_process_froze_itself_stay_frozen():
    """A pre-fork server freezes its objects (copy-on-write pages); preparing a playbook
    must not thaw them."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        definitions.prepare_playbook(_definition(41))
        assert frozen > 0 and gc.get_freeze_count() > frozen // 2   # (some may be freed meanwhile)
    finally:
        gc.unfreeze()
