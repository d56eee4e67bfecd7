"""The embedded dev server started with ``--db FILE`` is killed mid-execution (the whole
``noetl-temporal dev`` process: Temporal server, worker and API) and started again on the
same file: the executions that were running resume and finish."""

from __future__ import annotations

import time

import httpx
import pytest

from .workers import DevProcess

pytestmark = [pytest.mark.temporal, pytest.mark.chaos]


def playbook(log) -> str:
    steps = []
    for i in range(12):
        nxt = f"\n    next: {{arcs: [{{step: s{i + 1}}}]}}" if i < 11 else ""
        steps.append(f"""  - step: s{i}
    tool: {{kind: shell, cmd: "echo s{i} >> {log} && sleep 0.3 && echo {i}"}}{nxt}""")
    return "workflow:\n" + "\n".join(steps) + "\n"


def _wait(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_dev_server_killed_mid_execution_resumes_from_its_db_file(tmp_path):
    log = tmp_path / "runs.log"
    dev = DevProcess(tmp_path, db=tmp_path / "temporal.db")
    try:
        dev.start()
        started = [httpx.post(f"{dev.url}/executions", timeout=30,
                              json={"playbook": playbook(log)}).json()["execution_id"]
                   for _ in range(2)]
        _wait(lambda: log.exists() and log.read_text().count("\n") >= 4, 60, "the executions to make progress")
        dev.kill()
        done_before = log.read_text().count("\n")
        assert done_before < 24, "both executions finished before the kill: nothing to resume"
        dev.start()

        def finished():
            states = [httpx.get(f"{dev.url}/executions/{e}/status", timeout=10).json()["state"] for e in started]
            return states if all(s not in ("RUNNING", "PENDING") for s in states) else None

        assert _wait(finished, 120, "the executions to finish after the restart") == ["COMPLETED"] * 2
        for execution_id in started:
            steps = httpx.get(f"{dev.url}/executions/{execution_id}", timeout=10).json()["steps"]
            assert steps["s11"]["result"]["stdout"].strip() == "11"
        lines = log.read_text().split()
        assert all(lines.count(f"s{i}") >= 2 for i in range(12)), "lost work"   # two executions
        events = httpx.get(f"{dev.url}/executions/{started[0]}/events", params={"limit": 1000}, timeout=10).json()
        seqs = [e["seq"] for e in events["events"]]
        assert seqs == list(range(1, len(seqs) + 1))
        print(f"\ndev server restart: {done_before} of 24 task runs before the kill, "
              f"{len(lines) - 24} ran twice; both executions COMPLETED")
    finally:
        dev.kill()
