"""The start path's playbook cache (``api/playbooks.py``): a hit is the loader's own result
for that text and label, an invalid playbook is never kept, and the bounds hold. No
Temporal: these run the real loader on real playbook texts."""

from __future__ import annotations

import pytest

from noetl_temporal.api.playbooks import PlaybookCache, load_for_start
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.errors import PlaybookInvalid

from .conftest import playbook

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
    cache = PlaybookCache()
    first = await load_for_start(cache, GOOD, "<request>")
    assert await load_for_start(cache, GOOD, "<request>") is first
    assert first.playbook == load_playbook_text(GOOD, "<request>").playbook
    other = await load_for_start(cache, GOOD, "catalog/x")  # diagnostics name the label: its own entry
    assert other is not first and other.source == "catalog/x" and len(cache) == 2
    changed = await load_for_start(cache, GOOD.replace("name: cached", "name: cached2"), "<request>")
    assert changed.playbook.metadata.name == "cached2"


async def test_an_invalid_playbook_is_refused_every_time_with_the_loader_s_message():
    cache = PlaybookCache()
    with pytest.raises(PlaybookInvalid) as direct:
        load_playbook_text(BAD, "<request>")
    for _ in range(2):
        with pytest.raises(PlaybookInvalid) as cached:
            await load_for_start(cache, BAD, "<request>")
        assert str(cached.value) == str(direct.value)
    assert len(cache) == 0


async def test_bounds_by_entries_and_by_text_size_least_recently_used_out():
    texts = [GOOD.replace("name: cached", f"name: c{k}") for k in range(4)]
    cache = PlaybookCache(max_entries=2, max_chars=10 * len(GOOD))
    kept = [await load_for_start(cache, t, "<request>") for t in texts[:2]]
    assert await load_for_start(cache, texts[0], "<request>") is kept[0]  # texts[0] is now the newest
    await load_for_start(cache, texts[2], "<request>")                      # texts[1] goes
    assert len(cache) == 2
    assert await load_for_start(cache, texts[0], "<request>") is kept[0]
    assert await load_for_start(cache, texts[1], "<request>") is not kept[1]
    big = GOOD + "# " + "x" * (2 * len(GOOD)) + "\n"  # more than an eighth of the budget: never kept
    small = PlaybookCache(max_chars=8 * len(GOOD))
    assert await load_for_start(small, big, "<request>") is not await load_for_start(small, big, "<request>")
    assert len(small) == 0


async def test_a_burst_of_the_same_new_text_loads_it_once_and_a_failing_load_fails_each_request():
    import asyncio

    cache = PlaybookCache()
    loaded = await asyncio.gather(*(load_for_start(cache, GOOD, "<request>") for _ in range(5)))
    assert all(one is loaded[0] for one in loaded) and not cache.loading
    failed = await asyncio.gather(*(load_for_start(cache, BAD, "<request>") for _ in range(3)),
                                  return_exceptions=True)
    assert all(isinstance(e, PlaybookInvalid) for e in failed) and not cache.loading and len(cache) == 1
