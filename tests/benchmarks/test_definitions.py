"""The benchmark's definitions, checked without running it (pure, not timed).

Every workload must be a valid playbook whose python tasks carry exactly the body text
the hand-written activities compile, so the two sides of the comparison cannot drift.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks import api_submit, bodies, compare, cpu, handwritten, isolated, memory, report
from benchmarks.workloads import QUICK_SIZES, SIZES, playbook_yaml, with_opt_in, workloads
from noetl_temporal.dsl import load_playbook_text

BODY_TEXTS = {bodies.STEP, bodies.JOIN, bodies.PRODUCE, bodies.CONSUME, bodies.FLAKY}


def _python_tasks(playbook) -> list:
    return [task for step in playbook.workflow for task in step.tool if task.kind == "python"]


@pytest.mark.parametrize("sizes", [SIZES, QUICK_SIZES], ids=["full", "quick"])
def test_every_workload_is_a_valid_playbook_running_the_shared_bodies(sizes):
    defined = workloads(sizes, opt_in=("executor.spec.local", True))
    assert [w.key for w in defined] == ["chain", "seq_loop", "branches", "par_loop", "many", "fast_path",
                                        "handoff", "retry", "user_activity"]
    names = set()
    activities = {a.__temporal_activity_definition.name for a in handwritten.ACTIVITIES}
    for w in defined:
        loaded = load_playbook_text(playbook_yaml(w.playbook), source=f"benchmarks:{w.key}")
        assert not loaded.warnings, (w.key, loaded.warnings)
        if w.key == "user_activity":   # the hand-written activities themselves, called by type name
            calls = [t for step in loaded.playbook.workflow for t in step.tool]
            assert calls and all(t.kind == "activity" and t.config["name"] in activities for t in calls)
            assert w.queue_in_payload and len(calls) == w.arg["n"]
        else:
            tasks = _python_tasks(loaded.playbook)
            assert tasks and all(t.config["code"] in BODY_TEXTS for t in tasks), w.key
        names.add(w.playbook["metadata"]["name"])
        assert w.workflow in {wf.__temporal_workflow_definition.name for wf in handwritten.WORKFLOWS}
    assert len(names) == len(defined)  # the benchmark finds loaded playbooks by name


def test_in_worker_runs_every_python_task_in_the_worker_and_changes_nothing_else():
    default, in_worker = workloads(SIZES), workloads(SIZES, in_worker=True)
    assert [w.key for w in in_worker] == [w.key for w in default]
    for plain, opted in zip(default, in_worker, strict=True):
        assert (opted.arg, opted.executions, opted.workflow) == (plain.arg, plain.executions, plain.workflow)
        if plain.key == "user_activity":   # no python task: nothing to move into the worker
            assert opted.playbook == plain.playbook
            continue
        loaded = load_playbook_text(playbook_yaml(opted.playbook), source=f"benchmarks:{opted.key}")
        assert not loaded.warnings, (opted.key, loaded.warnings)
        tasks = _python_tasks(loaded.playbook)
        assert tasks and all(t.config.get("in_worker") is True for t in tasks), opted.key
        assert all(t.config["code"] in BODY_TEXTS for t in tasks), opted.key
        assert not any(t.config.get("in_worker") for t in _python_tasks(
            load_playbook_text(playbook_yaml(plain.playbook)).playbook)), plain.key


def test_the_isolating_anchor_registers_every_activity_the_workflows_call_as_a_picklable_sync_function():
    import pickle

    names = {a.__temporal_activity_definition.name for a in handwritten.ACTIVITIES}
    assert {a.__temporal_activity_definition.name for a in isolated.ACTIVITIES} == names
    for fn in isolated.ACTIVITIES:
        assert not fn.__temporal_activity_definition.is_async
        assert pickle.loads(pickle.dumps(fn)) is fn  # a process pool sends it by reference
    assert isolated.step({"i": 1}) == {"i": 2}


def test_sizes_are_the_issue_s():
    by_key = {w.key: w for w in workloads(SIZES)}
    assert by_key["chain"].arg == {"n": 20} and by_key["seq_loop"].arg == {"n": 100}
    assert by_key["par_loop"].arg == {"n": 1000, "max_in_flight": 50}
    assert by_key["many"].executions == 100 and by_key["many"].arg == {"n": 5}
    assert by_key["fast_path"].arg == {"n": 20, "local": True}
    assert by_key["handoff"].arg == {"size": 1 << 20}
    assert by_key["user_activity"].arg == {"n": 20}


def test_fast_path_without_an_opt_in_is_not_applicable_not_a_crash():
    fast = {w.key: w for w in workloads(SIZES, opt_in=None)}["fast_path"]
    assert fast.playbook is None and "FAST_PATH_OPT_IN" in fast.na


# A key directly on a task must be a setting its kind declares (unknown ones are NTL310).
# An opt-in is a key the playbook acts on: an unknown `spec` key is NTL902 since issue 37.
@pytest.mark.parametrize("where,value", [("executor.spec.local", True), ("step.spec.local", True),
                                         ("task.spec.local", True), ("task.in_worker", True)])
def test_opt_in_lands_at_each_level(where, value):
    playbook = with_opt_in(workloads(QUICK_SIZES)[0].playbook, (where, value))
    level, *path = where.split(".")
    holders = {"executor": [playbook.get("executor")], "step": playbook["workflow"],
               "task": [s["tool"] for s in playbook["workflow"]]}[level]
    for holder in holders:
        for key in path:
            holder = holder[key]
        assert holder == value
    load_playbook_text(playbook_yaml(playbook))  # still a valid playbook
    with pytest.raises(ValueError, match="executor., step. or task."):
        with_opt_in(playbook, ("workflow.x", True))


def test_bodies_behave_as_the_workloads_expect(tmp_path):
    assert bodies.compile_body(bodies.STEP)(i=1) == {"i": 2}
    assert bodies.compile_body(bodies.JOIN)(values=[1, 2, 3]) == {"i": 6}
    made = bodies.compile_body(bodies.PRODUCE)(size=10)
    assert bodies.compile_body(bodies.CONSUME)(made=made) == {"length": 10}
    flaky, counter = bodies.compile_body(bodies.FLAKY), str(tmp_path / "n")
    for attempt in (1, 2):
        with pytest.raises(RuntimeError, match=f"attempt {attempt} fails"):
            flaky(counter=counter)
    assert flaky(counter=counter) == {"attempts": 3}


def test_command_line_is_checked():
    args = compare.parse(["--quick", "--workloads", "chain,retry"])
    assert (args.rounds, args.servers, args.workloads) == (1, ["embedded"], ["chain", "retry"])
    assert compare.parse([]).rounds == 2 and compare.parse([]).servers == ["stock", "embedded"]
    assert compare.API in compare.parse([]).workloads and compare.parse(["--workloads", "api"]).workloads == ["api"]
    assert compare.parse([]).out == compare.RESULTS / "latest" and not compare.parse([]).in_worker
    opted = compare.parse(["--in-worker"])
    assert opted.in_worker and opted.out == compare.RESULTS / "latest-in-worker"
    assert compare.parse(["--in-worker", "--out", "x"]).out.name == "x"
    assert not compare.parse([]).no_event_store
    assert compare.parse(["--in-worker", "--no-event-store"]).out == compare.RESULTS / "latest-in-worker-no-event-store"
    for bad in (["--workloads", "nope"], ["--servers", "prod"], ["--rounds", "0"]):
        with pytest.raises(SystemExit):
            compare.parse(bad)


def test_process_tree_memory_includes_children():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while child.pid not in memory.descendants(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert child.pid in memory.descendants(os.getpid())
        with memory.TreeSampler({"me": os.getpid()}, interval=0.01) as sampler:
            # a loaded machine may not schedule the sampler's thread within a fixed sleep:
            # wait for its first sample instead (docs/testing.md, timing margins)
            peak = memory.Peak()
            while not peak.processes and time.monotonic() < deadline + 10:
                time.sleep(0.05)
                peak = sampler.take()["me"]
        assert peak.processes >= 2 and peak.rss > memory._rss(os.getpid()) and peak.pss > 0
    finally:
        child.stdin.close()
        child.wait()


def test_process_tree_cpu_counts_what_a_child_reaped():
    """A grandchild that burns CPU and is reaped by its parent (as the fork server reaps a
    task's process) counts in the tree, through the parent's cutime."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                               f"{burn!r}]); print('done', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        before = cpu.tree_cpu(os.getpid())
        assert parent.stdout.readline().strip() == b"done"
        assert cpu.tree_cpu(os.getpid()) - before >= 0.3  # the grandchild is gone, its CPU is not
    finally:
        parent.stdin.close()
        parent.wait()


def test_report_flags_missed_targets_and_not_applicable_rows():
    side = {"median": 1.0, "events": 100, "rss": 100 << 20, "pss": 50 << 20, "cpu": 0.5}
    results = {"started": 0, "duration": 1, "rounds": 5, "quick": False, "cpus": 2, "load_average": (1, 1, 1),
               "servers": {"stock": []}, "rows": [
                   {"workload": "a", "title": "A", "server": "stock", "handwritten": side,
                    "playbook": dict(side, median=1.5, events=110)},
                   {"workload": "b", "title": "B", "server": "stock", "handwritten": side, "na": "not yet"}]}
    text = report.markdown(results)
    assert "| A | stock | 1.00 s | 1.50 s | **1.50** | 100 / 110 (1.10×) | 100 / 100 (1.00×) |" in text
    assert "| 0.50 / 0.50 (1.00×) |" in text
    assert text.splitlines()[4].endswith("| time |")
    assert "| n/a | " in text and "n/a: not yet" in text
    assert "in_worker" not in text
    assert "ran `in_worker: true`" in report.markdown(dict(results, in_worker=True)).splitlines()[0]
    assert "no events to the event store" not in report.markdown(dict(results, event_store=True))
    assert "not a target run" in report.markdown(dict(results, event_store=False)).splitlines()[0]


def test_report_holds_each_mode_to_its_own_time_target():
    side = {"median": 1.0, "events": 100, "rss": 100 << 20, "pss": 50 << 20, "cpu": 0.5}
    results = {"started": 0, "duration": 1, "rounds": 2, "quick": False, "cpus": 2, "load_average": (1, 1, 1),
               "servers": {"stock": []}, "rows": [
                   {"workload": "a", "title": "A", "server": "stock", "handwritten": side,
                    "isolated": dict(side, median=1.1), "playbook": dict(side, median=1.2)}]}
    default = report.markdown(results).splitlines()
    assert default[4].endswith("| none / time |")  # 1.20 ≤ 1.30 in-process; 1.09 > 1.00 isolating
    assert "default mode (issue 30)" in default[6] and "ratio ≤ 1.30" in default[6] and "ratio ≤ 1.00" in default[6]
    del results["rows"][0]["isolated"]
    in_worker = report.markdown(dict(results, in_worker=True)).splitlines()
    assert in_worker[4].endswith("| time |")  # 1.20 > 1.10 in the in-worker mode
    assert "in-worker mode" in in_worker[6] and "ratio ≤ 1.10" in in_worker[6]


def test_combined_table_takes_each_ratio_against_its_own_run():
    from benchmarks.combined import combined_table

    side = {"median": 1.0, "events": 100, "rss": 100 << 20, "pss": 50 << 20, "cpu": 0.5}
    row = {"workload": "a", "title": "A", "server": "stock"}
    default = {"rows": [dict(row, handwritten=side, isolated=dict(side, median=2.0),
                             playbook=dict(side, median=1.5, rss=160 << 20))]}
    in_worker = {"rows": [dict(row, handwritten=dict(side, median=0.8), playbook=dict(side, median=1.0))]}
    text = combined_table(default, in_worker)
    assert "| A | stock | 1.00 s | 2.00 s | 1.50 s | 1.00 s (0.800 s) | **1.50** | **0.75** | **1.25** | " \
           "100 / 160 / 100 (1.60×, 1.00×) |" in text
    assert "(≤ 1.30)" in text and "(≤ 1.00)" in text and "(≤ 1.10)" in text
    assert "| – (–) |" in combined_table(default, {"rows": []})  # no in-worker twin: said, not invented


def test_report_shows_both_anchors_when_the_isolating_one_ran():
    side = {"median": 1.0, "events": 100, "rss": 100 << 20, "pss": 50 << 20, "cpu": 0.5}
    results = {"started": 0, "duration": 1, "rounds": 3, "quick": False, "cpus": 2, "load_average": (1, 1, 1),
               "servers": {"stock": []}, "rows": [
                   {"workload": "a", "title": "A", "server": "stock", "handwritten": side,
                    "isolated": dict(side, median=2.0, rss=400 << 20), "playbook": dict(side, median=1.5)}]}
    text = report.markdown(results)
    assert "| hand-written | hand-written, isolating | playbook | ratio | ratio vs isolating |" in text
    assert "| A | stock | 1.00 s | 2.00 s | 1.50 s | **1.50** | **0.75** | 100 / 100 / 100 (1.00×, 1.00×) |" in text
    assert "| 100 / 400 / 100 (1.00×, 0.25×) |" in text and text.splitlines()[4].endswith("| time / none |")
    assert report.ratios(results["rows"][0], "isolated")["time"] == 0.75


def test_api_submission_report_and_percentiles():
    assert api_submit._percentile([float(x) for x in range(1, 101)], 0.95) == 95.0
    assert api_submit._percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    side = {"rate": 100.0, "p50": 0.3, "p95": 0.4, "max": 0.5, "api_cpu_per_start": 0.002,
            "client_cpu_per_start": 0.0003}
    result = {"executions": 200, "in_flight": 50, "rounds": 2, "load_average": [(1, 1, 1), (2, 2, 2)],
              "api": dict(side, rate=90.0, p95=0.44), "bare": side, "rate_ratio": 100 / 90, "p95_ratio": 1.1}
    text = api_submit.markdown(result)
    assert "| `POST /executions` (API process) | 90 | 300 ms | 440 ms | 500 ms | 2.0 / 0.3 |" in text
    assert "rate 1.11× slower, p95 1.10× (target ≤ 1.2×: met)" in text
    assert "missed" in api_submit.markdown(dict(result, p95_ratio=1.3))
    assert "error: boom" in api_submit.markdown({"error": "boom"})


def test_first_activation_benchmark_runs_on_small_sizes():
    """The benchmark that measures big playbooks' first activation (docs/performance.md)."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.first_activation", "--sizes", "50"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| noop chain | 50 |" in proc.stdout and "| fan-out + join | 50 |" in proc.stdout


@pytest.mark.temporal
def test_api_paging_benchmark_runs_on_small_sizes():
    """The benchmark of the API paging a huge log (docs/performance.md), on both stores: it
    pages every event, and drops its scratch PostgreSQL database."""
    import psycopg

    from tests.support.postgres import require_dsn

    dsn = require_dsn()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.api_paging", "--events", "1000,3000",
                           "--pg-dsn", dsn], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("| sqlite |", "| postgresql |"))]
    assert [row.split("|")[1:3] for row in rows] == [[" sqlite ", " 998 "], [" sqlite ", " 2,998 "],
                                                       [" postgresql ", " 998 "], [" postgresql ", " 2,998 "]]
    assert [row.split("|")[6] for row in rows] == [" 1 ", " 3 ", " 1 ", " 3 "]   # pages of 1,000
    with psycopg.connect(dsn) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'noetl_paging_%'").fetchall()
    assert left == []
