"""The deployment of docker/compose.yaml, without docker: a Temporal dev server keeping its
state in a file (``--db-filename``), two ``noetl-temporal worker`` processes and the
``noetl-temporal api`` process, all sharing one fresh PostgreSQL database for events,
large payloads, task results and the catalog.

A 200-item parallel loop must spread over both workers (the Temporal history names the
worker that started each activity) and complete; the API, a separate process, must read
the run, including after both workers stopped (from the one event store both wrote).
"""

from __future__ import annotations

import re
import signal
import socket
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from noetl_temporal.client.devserver import EmbeddedTemporal
from noetl_temporal.store.event_store import PostgresEventStore
from tests.cli.test_cli_api import Proc, fresh_env
from tests.support.postgres import execute, require_dsn

pytestmark = pytest.mark.temporal

SPREAD = """\
metadata: {name: spread, path: tests/spread}
workload: {n: 200}
workflow:
  - step: fan
    loop: {in: "{{ range(workload.n) | list }}", iterator: i, spec: {mode: parallel, max_in_flight: 200}}
    tool: {kind: shell, cmd: "echo {{ i * 2 }}"}   # a real activity per item (noop runs inline)
    next: {arcs: [{step: total}]}
  - step: total
    tool:
      kind: python
      input: {values: "{{ fan.results }}"}
      code: |
        def main(values):
            return {"n": len(values), "sum": sum(int(v["stdout"]) for v in values)}
"""


@pytest.fixture
def fresh_database():
    """A database of its own for this test (every store creates its tables in it), dropped after."""
    base = require_dsn()
    name = f"noetl_mw_{uuid.uuid4().hex[:10]}"
    execute(base, f"CREATE DATABASE {name}")
    parts = urlsplit(base)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        execute(base, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _wait_stderr(proc: Proc, text: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(text in line for line in proc.stderr):
            return
        if proc.popen.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} on stderr; stderr: {proc.stderr[-20:]}")


async def test_two_worker_processes_share_a_200_item_loop(tmp_path, fresh_database):
    dsn = fresh_database
    env = fresh_env(tmp_path)
    env.update(NOETL_STORE=dsn, NOETL_CATALOG_DSN=dsn,
               NOETL_TASK_QUEUE=f"tq-mw-{uuid.uuid4().hex[:8]}")
    procs: list[Proc] = []
    async with EmbeddedTemporal(database=str(tmp_path / "temporal.db")) as server:
        env["TEMPORAL_ADDRESS"] = server.address
        try:
            # The second worker finds the cluster through a Temporal config profile (envconfig),
            # as on an existing cluster or Temporal Cloud (docs/deployment.md).
            profile_file = tmp_path / "temporal.toml"
            profile_file.write_text(f'[profile.fleet]\naddress = "{server.address}"\nnamespace = "default"\n')
            env_profile = {k: v for k, v in env.items() if k != "TEMPORAL_ADDRESS"}
            env_profile["TEMPORAL_CONFIG_FILE"] = str(profile_file)
            # A mixed fleet: the second runs playbook workflows in the SDK's sandbox, so a
            # workflow task moving between the workers replays under the other runner.
            workers = [Proc(["worker", "--max-concurrent-activities", "20"], env),
                       Proc(["worker", "--profile", "fleet", "--max-concurrent-activities", "20",
                             "--workflow-sandbox"], env_profile)]
            api = Proc(["api", "--port", "0", "--execution-timeout", "60"], env)
            procs += [*workers, api]
            for worker in workers:
                _wait_stderr(worker, "worker polling")
            api_url = re.match(r"API: (http://127\.0\.0\.1:\d+)", api.wait_line("API: ")).group(1)

            with httpx.Client(base_url=api_url, timeout=30) as http:
                assert http.post("/catalog", json={"content": SPREAD}).status_code == 201  # PostgreSQL catalog
                r = http.post("/executions", json={"path": "tests/spread"})
                assert r.status_code == 202, r.text
                execution_id = r.json()["execution_id"]
                status = _wait_done(http, execution_id, timeout=60)
                assert status["state"] == "COMPLETED", status

                # Both workers ran tasks: Temporal records who started each activity.
                started = Counter()
                async for event in server.client.get_workflow_handle(execution_id).fetch_history_events():
                    if event.HasField("activity_task_started_event_attributes"):
                        started[event.activity_task_started_event_attributes.identity] += 1
                host = socket.gethostname()
                expected = {f"{w.popen.pid}@{host}" for w in workers}
                print(f"activities started per worker: {dict(started)}")
                assert set(started) == expected, started
                assert sum(started.values()) >= 201 and min(started.values()) >= 5, started

                # The workers' events went to the one PostgreSQL store.
                store = PostgresEventStore(dsn)
                try:
                    assert len(store.read(execution_id, types=["loop.iteration.done"], limit=1000)) == 200
                finally:
                    store.close()

                # Stop both workers: the API still reads the run (store and Temporal history).
                for worker in workers:
                    assert worker.stop(signal.SIGINT) == 0
                assert http.get(f"/executions/{execution_id}/status").json()["state"] == "COMPLETED"
                page = http.get(f"/executions/{execution_id}/events",
                                params={"type": "loop.iteration.done", "limit": 1000}).json()
                assert len(page["events"]) == 200
                done = http.get(f"/executions/{execution_id}/events",
                                params={"type": "step.done", "entity": "total"}).json()["events"]
                assert done[0]["payload"]["outcome"]["result"] == {"n": 200, "sum": 2 * sum(range(200))}
                assert http.get(f"/executions/{execution_id}/view").status_code == 200
            assert api.stop(signal.SIGTERM) == 0
        finally:
            for proc in procs:
                proc.kill()
    assert Path(tmp_path / "temporal.db").exists()


def _wait_done(http: httpx.Client, execution_id: str, timeout: float) -> dict:
    end = time.monotonic() + timeout
    while True:
        status = http.get(f"/executions/{execution_id}/status").json()
        if status["state"] in ("COMPLETED", "FAILED", "CANCELLED") or time.monotonic() > end:
            return status
        time.sleep(0.3)
