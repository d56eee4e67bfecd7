"""Execution ids: `<playbook-name>-<short id>` (pure)."""

from __future__ import annotations

import re

from noetl_temporal.api.deps import EXECUTION_ID_RE
from noetl_temporal.workflow.naming import MAX_SLUG, child_execution_id, new_execution_id, slug


def test_slug_keeps_the_readable_part():
    assert slug("Examples/Hello World_v2") == "hello-world-v2"
    assert slug("  ") == "playbook" and slug(None) == "playbook" and slug("***") == "playbook"
    assert len(slug("x" * 200)) == MAX_SLUG
    assert slug("a" * (MAX_SLUG - 1) + "-b") == "a" * (MAX_SLUG - 1)   # no trailing dash after the cut


def test_ids_are_unique_and_fit_every_reader():
    ids = {new_execution_id("hello") for _ in range(1000)}
    assert len(ids) == 1000
    for execution_id in ids:
        assert re.fullmatch(r"hello-[0-9a-f]{12}", execution_id)
        assert EXECUTION_ID_RE.match(execution_id)   # the API's path parameter accepts it


def test_child_ids_are_stable_per_parent_task_and_distinct_across_tasks():
    a = child_execution_id("parent-1", "each:run:1:iter:0:task:score:1", "child")
    assert a == child_execution_id("parent-1", "each:run:1:iter:0:task:score:1", "child")
    assert a != child_execution_id("parent-1", "each:run:1:iter:1:task:score:1", "child")
    assert a != child_execution_id("parent-2", "each:run:1:iter:0:task:score:1", "child")
    assert a.startswith("child-") and "/" not in a and EXECUTION_ID_RE.match(a)
