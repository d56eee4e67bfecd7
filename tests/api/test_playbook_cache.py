"""The start path's playbook cache (``api/playbooks.py``): a hit is the loader's own result
for that text and label with what a start derives from it, an invalid playbook is never
kept, the bounds hold, and a start leaves the shared entry as it was. These run the real
loader on real playbook texts; only the last one needs Temporal (a real start)."""

from __future__ import annotations

import copy
import dataclasses
import uuid

import pytest

from noetl_temporal.api.limits import EXPANSION, expanded_size
from noetl_temporal.api.playbooks import PlaybookCache, load_for_start
from noetl_temporal.api.settings import DEFAULT_MAX_BODY_BYTES
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.dsl.models import playbook_definition
from noetl_temporal.errors import PlaybookInvalid
from noetl_temporal.workflow import labels

from .conftest import playbook

LIMIT = EXPANSION * DEFAULT_MAX_BODY_BYTES

GOOD = playbook("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: cached}
    workflow:
      - step: a
        tool: {kind: noop}
    """)
BAD = GOOD.replace("kind: noop", "kind: nope")


async def test_the_same_text_and_label_is_loaded_once():
    cache = PlaybookCache(LIMIT)
    first = await load_for_start(cache, GOOD, "<request>")
    assert await load_for_start(cache, GOOD, "<request>") is first
    assert first.playbook == load_playbook_text(GOOD, "<request>").playbook
    other = await load_for_start(cache, GOOD, "catalog/x")  # diagnostics name the label: its own entry
    assert other is not first and other.loaded.source == "catalog/x" and len(cache) == 2
    changed = await load_for_start(cache, GOOD.replace("name: cached", "name: cached2"), "<request>")
    assert changed.playbook.metadata.name == "cached2"


async def test_an_invalid_playbook_is_refused_every_time_with_the_loader_s_message():
    cache = PlaybookCache(LIMIT)
    with pytest.raises(PlaybookInvalid) as direct:
        load_playbook_text(BAD, "<request>")
    for _ in range(2):
        with pytest.raises(PlaybookInvalid) as cached:
            await load_for_start(cache, BAD, "<request>")
        assert str(cached.value) == str(direct.value)
    assert len(cache) == 0


async def test_bounds_by_entries_and_by_text_size_least_recently_used_out():
    texts = [GOOD.replace("name: cached", f"name: c{k}") for k in range(4)]
    cache = PlaybookCache(LIMIT, max_entries=2, max_chars=10 * len(GOOD))
    kept = [await load_for_start(cache, t, "<request>") for t in texts[:2]]
    assert await load_for_start(cache, texts[0], "<request>") is kept[0]  # texts[0] is now the newest
    await load_for_start(cache, texts[2], "<request>")                      # texts[1] goes
    assert len(cache) == 2
    assert await load_for_start(cache, texts[0], "<request>") is kept[0]
    assert await load_for_start(cache, texts[1], "<request>") is not kept[1]
    big = GOOD + "# " + "x" * (2 * len(GOOD)) + "\n"  # more than an eighth of the budget: never kept
    small = PlaybookCache(LIMIT, max_chars=8 * len(GOOD))
    assert await load_for_start(small, big, "<request>") is not await load_for_start(small, big, "<request>")
    assert len(small) == 0


async def test_a_burst_of_the_same_new_text_loads_it_once_and_a_failing_load_fails_each_request():
    import asyncio

    cache = PlaybookCache(LIMIT)
    loaded = await asyncio.gather(*(load_for_start(cache, GOOD, "<request>") for _ in range(5)))
    assert all(one is loaded[0] for one in loaded) and not cache.loading
    failed = await asyncio.gather(*(load_for_start(cache, BAD, "<request>") for _ in range(3)),
                                  return_exceptions=True)
    assert all(isinstance(e, PlaybookInvalid) for e in failed) and not cache.loading and len(cache) == 1


async def test_an_entry_holds_what_a_start_would_derive_from_a_fresh_load():
    cache = PlaybookCache(measure_up_to=1000)
    entry = await load_for_start(cache, GOOD, "<request>")
    fresh = load_playbook_text(GOOD, "<request>")
    assert entry.definition == playbook_definition(fresh.playbook)
    assert entry.digest == labels.definition_hash(playbook_definition(fresh.playbook))
    assert entry.expanded == expanded_size(fresh.raw, 10**6) < 1000  # GOOD fits: the size is exact
    tight = await load_for_start(PlaybookCache(measure_up_to=10), GOOD, "<request>")
    assert tight.expanded > 10  # counted only until it passes the cache's limit
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.digest = "x"  # type: ignore[misc]


def test_labels_given_the_digest_say_what_they_say_without_it():
    definition = playbook_definition(load_playbook_text(GOOD, "<request>").playbook)
    digest = labels.definition_hash(definition)
    for source in ("inline", None):
        assert labels.memo(definition, source, digest=digest) == labels.memo(definition, source)
        assert (labels.details(definition, source=source, version=3, api_url="http://api/x", digest=digest)
                == labels.details(definition, source=source, version=3, api_url="http://api/x"))
    assert digest[:16] in labels.details(definition, digest=digest)
    assert labels.memo(definition, digest="f" * 64)[labels.HASH_MEMO] == "f" * 64  # given: used, not recomputed


@pytest.mark.temporal
async def test_a_start_leaves_the_cached_definition_as_it_was(temporal):
    """The entry's definition goes into the workflow input of every start from it: a start
    that changed it (the converter, the labels, the input) would change the next ones'."""
    from noetl_temporal.client.connect import start_execution

    cache = PlaybookCache(LIMIT)
    entry = await load_for_start(cache, GOOD, "<request>")
    before = copy.deepcopy(entry.definition)
    handle = await start_execution(temporal.client, entry.playbook, payload={"k": [1]}, source="inline",
                                   task_queue=f"nobody-polls-{uuid.uuid4().hex[:8]}", execution_timeout_s=30,
                                   search_attributes=True, api_url="http://api/",
                                   definition=entry.definition, digest=entry.digest)
    try:
        assert entry.definition == before == playbook_definition(load_playbook_text(GOOD, "<request>").playbook)
        assert await load_for_start(cache, GOOD, "<request>") is entry
    finally:
        await handle.terminate("test over")
