"""A loop step's result carries NoETL's loop summary ``stats: {total, success, failed}``.

``loop-stats`` (engine/behaviours.py): NoETL's ``ExecutionState.get_loop_aggregation`` gives
``{results, stats}``; NoETL's fixture ``reference_chain_loop_stress`` reads
``stats.total``/``stats.failed``. Executions started before the change have no ``stats``.
"""

from __future__ import annotations

from noetl_temporal.engine.behaviours import CURRENT, LOOP_STATS

from .harness import err, ok, run

LOOP = """
workflow:
  - step: each
    loop: {in: "{{ [0, 1, 2, 3] }}", iterator: x}
    tool: {kind: python, code: "result = x", input: {x: "{{ x }}"}}
"""


def _one_fails(cmd):
    return err() if cmd.config["input"]["x"] == 2 else ok(cmd.config["input"]["x"])


def test_the_loop_result_counts_its_iterations_as_noetl_does():
    assert LOOP_STATS in CURRENT
    r = run(LOOP, _one_fails)
    assert r.state.step_results["each"]["stats"] == {"total": 4, "success": 3, "failed": 1}
    r = run(LOOP, lambda cmd: ok(cmd.config["input"]["x"]))
    assert r.state.step_results["each"]["stats"] == {"total": 4, "success": 4, "failed": 0}


def test_an_execution_started_before_the_change_has_no_stats():
    r = run(LOOP, _one_fails, behaviours=[b for b in CURRENT if b != LOOP_STATS])
    assert "stats" not in r.state.step_results["each"]
