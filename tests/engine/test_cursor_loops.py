"""``loop.cursor``: rows a page at a time (docs/semantics.md, "Cursor loops").

The page fetch is a ``FetchPage`` command whose outcome comes back as ``PageFetched``; a
table of fake pages stands in for the database (pure engine; the Temporal tier runs real
PostgreSQL and DuckDB)."""

from __future__ import annotations

import pytest

from noetl_temporal.engine import snapshot
from noetl_temporal.engine.behaviours import CURRENT, CURSOR_LOOPS
from noetl_temporal.engine.messages import Cancel, FetchPage, RunTask

from .harness import err, feed, finished, ok, run

CURSOR = """
keychain: [{name: pg_local, kind: postgres}]
workflow:
  - step: each
    loop:
      cursor:
        kind: postgres
        auth: pg_local
        claim: "SELECT id FROM q WHERE e = '{{ execution_id }}' LIMIT {{ __frame_max_rows }} OFFSET {{ __cursor_offset }}"
      iterator: row
      spec: {mode: cursor, max_in_flight: MIF, frame: {max_rows: 3}}
    tool: {kind: python, code: "result = row", input: {row: "{{ row.id }}"}}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: noop}
"""


def _tool(total: int, fail: int | None = None):
    def tool(cmd: RunTask) -> dict:
        if isinstance(cmd, FetchPage):
            offset = int(cmd.config["command"].rsplit(" ", 1)[1])
            return ok({"rows": [{"id": i} for i in range(offset, min(offset + 3, total))],
                       "columns": ["id"], "row_count": 0})
        row = cmd.config["input"]["row"]
        return err() if row == fail else ok(row)
    return tool


@pytest.mark.parametrize("mif", [1, 2])
def test_every_row_runs_once_and_the_loop_keeps_counts_not_rows(mif):
    r = run(CURSOR.replace("MIF", str(mif)), _tool(10))
    assert r.status == "COMPLETED"
    fetches = [c for c in r.ran if isinstance(c, FetchPage)]
    # 4 pages of rows (3, 3, 3, 1) and one that claims none
    assert [int(c.config["command"].rsplit(" ", 1)[1]) for c in fetches] == [0, 3, 6, 9, 10]
    assert all("LIMIT 3 " in c.config["command"] and "= 'ex'" in c.config["command"] for c in fetches)
    assert fetches[0].kind == "postgres" and fetches[0].config["auth"] == "pg_local"
    rows = sorted(c.config["input"]["row"] for c in r.ran if not isinstance(c, FetchPage))
    assert rows == list(range(10))
    result = r.state.step_results["each"]
    assert result == {"results": [], "count": 10, "done": 10, "failed": 0, "failed_iterations": [], "pages": 4,
                      "stats": {"total": 10, "success": 10, "failed": 0}}
    assert "after" in r.steps_started()


def test_a_failed_row_fails_the_step_after_the_others_with_its_index():
    r = run(CURSOR.replace("MIF", "1"), _tool(7, fail=4))
    assert r.status == "FAILED"
    assert r.state.step_results["each"]["failed_iterations"] == [4]
    assert r.state.step_results["each"]["done"] == 7


def test_an_empty_cursor_ends_at_once():
    r = run(CURSOR.replace("MIF", "1"), _tool(0))
    assert r.status == "COMPLETED"
    assert r.state.step_results["each"]["count"] == 0
    assert r.types("loop.") == ["loop.started", "loop.done"]


def test_a_failed_claim_fails_the_step_with_its_error():
    def tool(cmd):
        if isinstance(cmd, FetchPage):
            return err("postgres", "relation \"q\" does not exist")
        return ok()
    r = run(CURSOR.replace("MIF", "1"), tool)
    assert r.status == "FAILED"
    [done] = [e for e in r.events if e["event_type"] == "loop.done"]
    assert "does not exist" in done["payload"]["error"]["message"]
    [failed] = [e for e in r.events if e["event_type"] == "step.failed"]
    assert failed["payload"]["outcome"]["error"]["message"].startswith("the cursor's page 1 could not be read")


def test_the_cursor_position_survives_a_snapshot():
    held = []
    r = run(CURSOR.replace("MIF", "1"), _tool(10), hold=lambda c: isinstance(c, FetchPage) and not held
            and "OFFSET 6" in c.config["command"] and not held.append(c))
    [fetch] = held
    restored = snapshot.restore(r.state.playbook, snapshot.snapshot(r.state), r.state.graph)
    loop = restored.step_runs[fetch.step_run_id].loop
    assert (loop.cursor, loop.next_index, loop.pages, loop.fetching) == (True, 6, 2, fetch.task_run_id)
    assert loop.results == []
    r.state = restored
    feed(r, finished(fetch, _tool(10)(fetch)))
    assert r.status == "COMPLETED"
    assert r.state.step_results["each"]["count"] == 10


def test_executions_of_before_fail_the_step_instead_of_running_it():
    assert CURSOR_LOOPS in CURRENT
    r = run(CURSOR.replace("MIF", "1"), _tool(3), behaviours=[b for b in CURRENT if b != CURSOR_LOOPS])
    assert r.status == "FAILED"
    assert not [c for c in r.ran if isinstance(c, FetchPage)]


def test_process_frame_makes_each_page_one_iteration():
    text = CURSOR.replace("MIF", "1").replace("max_rows: 3}", "max_rows: 3, process: frame}").replace(
        '"{{ row.id }}"', '"{{ row | map(attribute=\'id\') | list }}"')
    r = run(text, _tool(7))
    assert r.status == "COMPLETED"
    assert [c.config["input"]["row"] for c in r.ran if not isinstance(c, FetchPage)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert r.state.step_results["each"]["count"] == 3


def test_cancelling_the_execution_cancels_the_page_fetch_in_flight():
    r = run(CURSOR.replace("MIF", "1"), _tool(10), hold=lambda c: isinstance(c, FetchPage))
    [fetch] = r.held  # type: ignore[attr-defined]
    feed(r, Cancel(now="2026-01-01T00:00:01Z", reason="stop"))
    assert r.cancelled == [fetch.task_run_id]
    assert r.status == "CANCELLED"
