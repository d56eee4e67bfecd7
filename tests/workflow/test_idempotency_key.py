"""The idempotency key a tool task reads (docs/tools.md, "Idempotency key"): on the dev server,
a python task records it in PostgreSQL with ``ON CONFLICT (key) DO NOTHING``, commits, then
fails. The retry (a policy retry) and the redrive that reruns the failed step insert nothing
more, though the task ran again each time; keys differ between steps and loop iterations;
shell, http and postgres tasks read the same key (env var, header, SQL template)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.redrive_start import redrive
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from tests.support import postgres

pytestmark = pytest.mark.temporal

#: insert the key, commit, count the call, then fail while the flag file is missing (``fail``:
#: always, ``once``: on the first attempt only)
RECORD = """
import pathlib, psycopg
d = pathlib.Path(dir)
with psycopg.connect(dsn, autocommit=True) as conn:
    conn.execute(f"INSERT INTO {table} (key, step) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", (key, step))
with open(d / 'calls', 'a') as f:
    f.write(f'{step} {key}\\n')
if mode == 'fail' and not (d / 'flag').exists():
    raise RuntimeError('flag file missing')
if mode == 'once' and sum(1 for line in open(d / 'calls') if line.startswith(step + ' ')) == 1:
    raise RuntimeError('first attempt fails after its commit')
result = key
"""


def _task(step: str, mode: str, extra: str = "") -> str:
    code = json.dumps(RECORD)
    return (f'{{kind: python, input: {{dsn: "{{{{ workload.dsn }}}}", table: "{{{{ workload.table }}}}", '
            f'dir: "{{{{ workload.dir }}}}", step: "{step}{extra}", mode: {mode}, key: "{{{{ _idempotency_key }}}}"}}, '
            f'code: {code}')


PLAYBOOK = f"""
metadata: {{name: idempotency-key}}
workflow:
  - step: a
    tool: {_task("a", "once")},
           spec: {{policy: {{rules: [{{when: "{{{{ output.status == 'error' }}}}", then: {{do: retry, attempts: 3}}}}]}}}}}}
    next: {{arcs: [{{step: each}}]}}
  - step: each
    loop: {{in: [0, 1, 2], iterator: i, spec: {{mode: parallel}}}}
    tool: {_task("each", "none", "{{ i }}")}}}
    next: {{arcs: [{{step: c, when: "{{{{ event.name == 'loop.done' }}}}"}}]}}
  - step: c
    tool: {_task("c", "fail")}}}
"""


def _rows(dsn: str, table: str) -> list[tuple[str, str]]:
    return [(key, step) for key, step in postgres.execute(dsn, f"SELECT key, step FROM {table} ORDER BY step")]


def _calls(tmp_path) -> list[tuple[str, str]]:
    return [tuple(line.split(" ", 1)) for line in (tmp_path / "calls").read_text().splitlines()]


async def test_a_retry_and_a_redrive_do_not_repeat_a_side_effect_guarded_by_the_key(temporal, task_queue, tmp_path):
    dsn = postgres.require_dsn()
    table = postgres.unique_name("idem")
    postgres.execute(dsn, f"CREATE TABLE {table} (key text PRIMARY KEY, step text NOT NULL)")
    try:
        async with build_worker(temporal.client, task_queue=task_queue):
            playbook = load_playbook_text(PLAYBOOK).playbook
            handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                           payload={"dsn": dsn, "table": table, "dir": str(tmp_path)})
            output = await workflow_output(handle)
            assert output["state"] == "FAILED", output
            calls = _calls(tmp_path)
            # `a` ran twice (its first attempt committed, then failed; the retry succeeded) with one key
            a_keys = [key for step, key in calls if step == "a"]
            assert len(a_keys) == 2 and a_keys[0] == a_keys[1] == f"{handle.id}/a:run:1:task:a_task:1"
            # one key per step and per loop iteration, each named by its place
            assert sorted(key for step, key in calls if step.startswith("each")) == [
                f"{handle.id}/each:run:1:iter:{i}:task:each_task:1" for i in range(3)]
            c_key = f"{handle.id}/c:run:1:task:c_task:1"
            assert [key for step, key in calls if step == "c"] == [c_key]
            rows = _rows(dsn, table)
            assert len(rows) == 5 and len({key for key, _ in rows}) == 5   # a, each x 3, c: once each

            # fix the cause, redrive: `c` runs again with the key its failed run had
            (tmp_path / "flag").write_text("fixed")
            started = await redrive(temporal.client, handle.id)
            assert started["reused_steps"] == ["a", "each"]
            new = temporal.client.get_workflow_handle(started["execution_id"])
            assert (await workflow_output(new))["state"] == "COMPLETED"
            again = _calls(tmp_path)[len(calls):]
            assert again == [("c", c_key)]   # the tool ran, under the old execution's key ...
            assert _rows(dsn, table) == rows   # ... and its INSERT ... ON CONFLICT inserted nothing more
    finally:
        postgres.execute(dsn, f"DROP TABLE IF EXISTS {table}")


async def test_a_redrive_of_a_redrive_keeps_the_first_executions_key(temporal, task_queue, tmp_path):
    async with build_worker(temporal.client, task_queue=task_queue):
        playbook = load_playbook_text("""
workflow:
  - step: c
    tool:
      kind: shell
      env: {DIR: "{{ workload.dir }}"}
      cmds:
        - 'echo "$NOETL_IDEMPOTENCY_KEY" >> "$DIR/keys"'
        - 'test -e "$DIR/flag"'
""").playbook
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                       payload={"dir": str(tmp_path)})
        assert (await workflow_output(handle))["state"] == "FAILED"
        first = await redrive(temporal.client, handle.id)
        assert (await workflow_output(temporal.client.get_workflow_handle(first["execution_id"])))["state"] == "FAILED"
        (tmp_path / "flag").write_text("fixed")
        second = await redrive(temporal.client, first["execution_id"])
        done = await workflow_output(temporal.client.get_workflow_handle(second["execution_id"]))
        assert done["state"] == "COMPLETED"
        assert (tmp_path / "keys").read_text().split() == [f"{handle.id}/c:run:1:task:c_task:1"] * 3


class _Headers(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        self.seen.append(self.headers.get("Idempotency-Key", ""))
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args) -> None:
        pass


async def test_http_and_postgres_tasks_read_the_key_in_their_templates(temporal, task_queue, monkeypatch):
    dsn = postgres.require_dsn()
    monkeypatch.setenv("NOETL_KEYCHAIN_PG", json.dumps(postgres.fields(dsn)))
    table = postgres.unique_name("idem")
    postgres.execute(dsn, f"CREATE TABLE {table} (key text PRIMARY KEY)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Headers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        async with build_worker(temporal.client, task_queue=task_queue):
            playbook = load_playbook_text(f"""
keychain: [{{name: pg, kind: postgres}}]
workflow:
  - step: post
    tool:
      kind: http
      method: POST
      url: "http://127.0.0.1:{server.server_port}/hook"
      headers: {{Idempotency-Key: "{{{{ _idempotency_key }}}}"}}
      body: {{x: 1}}
    next: {{arcs: [{{step: store}}]}}
  - step: store
    tool:
      kind: postgres
      auth: pg
      command: "INSERT INTO {table} (key) VALUES ('{{{{ _idempotency_key }}}}') ON CONFLICT (key) DO NOTHING"
""").playbook
            handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
            output = await workflow_output(handle)
            assert output["state"] == "COMPLETED", json.dumps(output["steps"])[:1500]
            assert _Headers.seen == [f"{handle.id}/post:run:1:task:post_task:1"]
            assert postgres.execute(dsn, f"SELECT key FROM {table}") == [(f"{handle.id}/store:run:1:task:store_task:1",)]
    finally:
        server.shutdown()
        postgres.execute(dsn, f"DROP TABLE IF EXISTS {table}")
