"""The embedding user: a Temporal deployment of their own, with playbooks added to it.

They run their own worker (their workflow, their activity, their interceptor) in a
non-default namespace with Worker Deployment Versioning on, and their own encrypting
payload codec; they host the playbook workflows on the same worker with ``build_worker``
and connect with ``noetl_temporal.data_converter(their_codec)``. The CLI starts and reads
executions with ``--codec``, the API and the worker command too. Nothing the workload or a
result holds is readable outside a process that has the codec: not in history, the payload
store, the event store or the result store. docs/deployment.md ("Embedding in your Temporal
deployment") shows this code.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import Client, WorkflowHistory
from temporalio.common import WorkerDeploymentVersion
from temporalio.service import RPCError
from temporalio.worker import Worker, WorkerDeploymentConfig

import noetl_temporal
from noetl_temporal.client.devserver import EmbeddedTemporal
from noetl_temporal.conversion.claimcheck import default_payload_store
from noetl_temporal.store import default_event_store_url, sealing
from tests.support.user_codec import EncryptingCodec
from tests.support.user_worker import SEEN, CountingInterceptor, Greeting, shout

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "acme-data"
DEPLOYMENT = "acme-workers"
SECRET = f"acme-confidential-{uuid.uuid4().hex[:8]}"   # must never be readable outside the worker
CODEC = "tests.support.user_codec:codec"

PLAYBOOK = textwrap.dedent("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: acme-export}
    workload: {customer: nobody}
    workflow:
      - step: start
        tool:
          kind: python
          input: {customer: "{{ workload.customer }}"}
          # a result of ~3 MB kept in the workflow (not a ResultRef): only the claim check
          # keeps it out of history
          spec: {result: {inline_max_bytes: 10000000}}
          code: |
            def main(customer):
                return {"customer": customer, "rows": [customer + " row " + str(i) for i in range(150000)]}
        next:
          arcs: [{step: finish}]
      - step: finish
        # ~400 KB: over the inline limit, so it goes to the result store as a ResultRef
        tool:
          kind: python
          input: {customer: "{{ workload.customer }}"}
          code: |
            def main(customer):
                return [customer + " total " + str(i) for i in range(10000)]
""")


@pytest_asyncio.fixture(scope="module")
async def cluster() -> AsyncIterator[EmbeddedTemporal]:
    """Stands for the user's cluster: only its address and the namespace are used."""
    async with EmbeddedTemporal(namespaces=(NAMESPACE,)) as env:
        yield env
    sealing.reset()   # the workers here sealed this process's stores with the user's codec


async def _connect(cluster: EmbeddedTemporal) -> Client:
    # The user's client: their codec, with ours layered in (claim check after their codec).
    return await Client.connect(cluster.address, namespace=NAMESPACE,
                                data_converter=noetl_temporal.data_converter(EncryptingCodec()))


@asynccontextmanager
async def _users_worker(client: Client, task_queue: str, build_id: str) -> AsyncIterator[Worker]:
    """The user's worker: their workflow, activity and interceptor, versioned, plus playbooks."""
    worker = noetl_temporal.build_worker(
        client, task_queue=task_queue,
        workflows=[Greeting], activities=[shout], interceptors=[CountingInterceptor()],
        deployment_config=WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(deployment_name=DEPLOYMENT, build_id=build_id),
            use_worker_versioning=True))
    async with worker:
        await _make_current(client, build_id)
        yield worker


async def _make_current(client: Client, build_id: str) -> None:
    """What `temporal worker deployment set-current-version` does (once the version has polled)."""
    for _ in range(200):
        try:
            await client.workflow_service.set_worker_deployment_current_version(
                SetWorkerDeploymentCurrentVersionRequest(namespace=NAMESPACE, deployment_name=DEPLOYMENT,
                                                         build_id=build_id, ignore_missing_task_queues=True))
            return
        except RPCError:
            await asyncio.sleep(0.1)   # the version is not known until the worker polls
    raise AssertionError(f"version {build_id} never became current")


async def _cli(*args: str) -> tuple[int, str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _plaintext_in_history(history: WorkflowHistory) -> list[str]:
    """Event types whose raw bytes (payloads as stored by the server) hold the secret."""
    return [str(event.event_type) for event in history.events if SECRET.encode() in event.SerializeToString()]


def _payload_store_files() -> dict[str, bytes]:
    root = Path(default_payload_store())
    return {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()} if root.exists() else {}


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request, monkeypatch, tmp_path) -> dict[str, str]:
    """Where the worker and the CLI keep events and large results: SQLite and files, or PostgreSQL."""
    if request.param == "sqlite":
        env = {"NOETL_EVENT_STORE": str(tmp_path / "events.db"), "NOETL_RESULT_STORE_KIND": "fs",
               "NOETL_RESULT_STORE": str(tmp_path / "results")}
    else:
        from tests.support.postgres import require_dsn

        dsn = require_dsn()
        env = {"NOETL_EVENT_STORE": dsn, "NOETL_RESULT_STORE_KIND": "postgres", "NOETL_RESULT_STORE_DSN": dsn}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _rows_at_rest(stores: dict[str, str], execution_id: str) -> tuple[list[bytes], list[bytes]]:
    """Every stored event row and every stored result body of the execution, as raw bytes."""
    from noetl_temporal.store.large_results import PostgresResultStore

    url = stores["NOETL_EVENT_STORE"]
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as conn:
            events = conn.execute("SELECT * FROM noetl_events WHERE execution_id = %s", (execution_id,)).fetchall()
            results = conn.execute(f"SELECT body FROM {PostgresResultStore.TABLE} WHERE execution_id = %s",
                                   (execution_id,)).fetchall()
        return [repr(row).encode() for row in events], [bytes(row[0]) for row in results]
    import sqlite3

    with sqlite3.connect(url) as conn:
        events = conn.execute("SELECT * FROM noetl_events WHERE execution_id = ?", (execution_id,)).fetchall()
    folder = Path(stores["NOETL_RESULT_STORE"]) / execution_id
    return [repr(row).encode() for row in events], [p.read_bytes() for p in folder.rglob("*") if p.is_file()]


async def test_a_user_deployment_runs_and_reads_playbooks(cluster, tmp_path, stores):
    client = await _connect(cluster)
    queue = f"acme-{uuid.uuid4().hex[:8]}"
    playbook = tmp_path / "export.yaml"
    playbook.write_text(PLAYBOOK)
    connection = ["--address", cluster.address, "--namespace", NAMESPACE, "--codec", CODEC]
    stored_before = set(_payload_store_files())
    SEEN.clear()
    async with _users_worker(client, queue, "build-1"):
        # Their own workflow, on the same worker, still in the sandbox.
        greeting = await client.execute_workflow(Greeting.run, "acme", id=f"greet-{uuid.uuid4().hex[:8]}",
                                                 task_queue=queue, execution_timeout=timedelta(seconds=60))
        assert greeting == {"text": "HELLO ACME", "sandboxed": True}
        # A playbook started by the CLI through the user's codec, with a 3 MB result.
        code, out, err = await _cli("run", str(playbook), "--no-worker", "--task-queue", queue, "--json",
                                    "--set", f"customer={SECRET}", *connection)
        # The same through the API, configured with the codec's name like the CLI.
        api_execution = await _start_and_read_through_the_api(cluster, queue, tmp_path)
    assert code == 0, err
    report = json.loads(out)
    assert report["state"] == "COMPLETED", report
    execution_id = report["execution_id"]
    api_history = await client.get_workflow_handle(api_execution).fetch_history()
    assert _plaintext_in_history(api_history) == []
    assert SEEN["shout"] == 1 and SEEN["noetl.run_task"] >= 2   # their interceptor saw both kinds

    # Nothing readable outside the worker: history, the payload store, the event store and
    # the result store hold ciphertext only.
    history = await client.get_workflow_handle(execution_id).fetch_history()
    assert _plaintext_in_history(history) == []
    new_files = {k: v for k, v in _payload_store_files().items() if k not in stored_before}
    assert new_files, "the 3 MB result should have gone to the payload store"
    assert all(SECRET.encode() not in data for data in new_files.values())
    events, results = _rows_at_rest(stores, execution_id)
    assert events and results, "events and the large result should be stored"
    assert [row for row in events if SECRET.encode() in row] == []
    assert [body for body in results if SECRET.encode() in body] == []

    # The CLI reads it all back through the codec.
    code, out, err = await _cli("status", execution_id, "--json", *connection)
    assert code == 0, err
    assert json.loads(out)["state"] == "COMPLETED"
    code, out, err = await _cli("events", execution_id, "--json", *connection)
    assert code == 0, err
    read = [json.loads(line) for line in out.splitlines()]
    assert "playbook.finished" in [e["event_type"] for e in read]
    assert SECRET in out   # decrypted for the reader who has the codec
    # A reader without the codec is told what to set, not shown a traceback.
    for command in ("status", "events"):
        code, out, err = await _cli(command, execution_id, "--address", cluster.address, "--namespace", NAMESPACE)
        assert SECRET not in out + err
        assert code != 0 and "--codec" in err and "Traceback" not in err, (command, code, out, err)


async def _start_and_read_through_the_api(cluster: EmbeddedTemporal, queue: str, tmp_path: Path) -> str:
    import httpx

    from noetl_temporal.api import Settings, create_app
    from noetl_temporal.client.connect import Target
    from noetl_temporal.store.catalog import Catalog
    from noetl_temporal.store.event_store import open_event_store

    target = Target(address=cluster.address, namespace=NAMESPACE, task_queue=queue, codec=CODEC)
    settings = Settings(target=target, catalog=Catalog(sqlite_path=tmp_path / "catalog.db"),
                        event_store=open_event_store(), execution_timeout_s=60)
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://api", timeout=30) as http:
        started = await http.post("/executions", json={"playbook": PLAYBOOK, "payload": {"customer": SECRET}})
        assert started.status_code == 202, started.text
        execution_id: str = started.json()["execution_id"]
        for _ in range(300):
            status = await http.get(f"/executions/{execution_id}/status")
            assert status.status_code == 200, status.text
            if status.json()["state"] != "RUNNING":
                break
            await asyncio.sleep(0.1)
        assert status.json()["state"] == "COMPLETED", status.text
        events = await http.get(f"/executions/{execution_id}/events", params={"limit": 1000})
        assert events.status_code == 200 and SECRET in events.text   # decoded for the API's reader
    return execution_id


async def test_an_open_execution_moves_to_the_new_worker_version(cluster):
    """Auto-upgrade: an execution started on build-1 finishes on build-2 after build-1 stopped."""
    client = await _connect(cluster)
    queue = f"acme-{uuid.uuid4().hex[:8]}"
    loaded = noetl_temporal.load_playbook_text(textwrap.dedent("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: two-versions}
        workflow:
          - step: start
            tool: {kind: python, code: "import time\\ndef main():\\n    time.sleep(1.5)\\n    return 1"}
            next:
              arcs: [{step: later}]
          - step: later
            tool: {kind: python, code: "def main():\\n    return 2"}
        """), source="<test>")
    async with _users_worker(client, queue, "build-1"):
        handle = await noetl_temporal.start_execution(client, loaded.playbook, task_queue=queue,
                                                      execution_timeout_s=60)
        await _wait_for_event(handle, "step.started", "start")
        await handle.signal("pause")   # the second step waits until the new version runs
        await _wait_for_event(handle, "step.done", "start")
    async with _users_worker(client, queue, "build-2"):
        await handle.signal("resume")
        result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result["state"] == "COMPLETED"
    history = await handle.fetch_history()
    builds = {event.workflow_task_completed_event_attributes.deployment_version.build_id
              for event in history.events if event.HasField("workflow_task_completed_event_attributes")}
    assert {"build-1", "build-2"} <= builds


async def _wait_for_event(handle, event_type: str, step: str) -> None:
    for _ in range(300):
        events = await handle.query("events")
        if any(e.get("event_type") == event_type and e.get("entity_id") == step for e in events):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {event_type} of step {step}")


async def test_setup_registers_the_search_attributes_a_start_degrades_without(cluster, caplog):
    """A namespace without our search attributes: a start asking for them warns and uses the
    memo; ``noetl-temporal setup`` registers all four, and a second run changes nothing."""
    from google.protobuf.duration_pb2 import Duration
    from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest

    from noetl_temporal.client.namespace_setup import missing_search_attributes
    from noetl_temporal.workflow.search_attributes import SEARCH_ATTRIBUTES

    namespace = f"bare-{uuid.uuid4().hex[:6]}"
    await cluster.client.workflow_service.register_namespace(RegisterNamespaceRequest(
        namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)))
    client = await Client.connect(cluster.address, namespace=namespace, data_converter=noetl_temporal.data_converter())
    loaded = noetl_temporal.load_playbook_text("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: bare}\n"
                                               "workflow:\n  - step: start\n    tool: {kind: noop}\n", source="<t>")
    with caplog.at_level("WARNING", logger="noetl_temporal"):
        handle = await noetl_temporal.start_execution(client, loaded.playbook, task_queue="nobody-polls",
                                                      search_attributes=True, execution_timeout_s=30)
    assert f"noetl-temporal setup --namespace {namespace}" in caplog.text
    described = await handle.describe()
    assert (await described.memo_value("noetl.playbook_name")) == "bare"
    await handle.terminate("test done")

    all_names = [key.name for key in SEARCH_ATTRIBUTES]
    code, out, err = await _cli("setup", "--address", cluster.address, "--namespace", namespace)
    assert code == 0, err
    assert f"registered search attributes {', '.join(all_names)}" in out
    assert await missing_search_attributes(client) == []
    code, out, err = await _cli("setup", "--address", cluster.address, "--namespace", namespace)
    assert code == 0 and "already registered" in out, (out, err)


SMALL_PLAYBOOK = textwrap.dedent("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: small}
    workflow:
      - step: start
        tool: {kind: python, code: "def main():\\n    return 1"}
""")


async def test_a_half_registered_worker_fails_the_execution_clearly(cluster):
    """What the package docs once suggested: the workflow and ACTIVITIES, without the event
    sink and the other local activities. Before, the steps ran and the execution stayed
    RUNNING forever; now it fails and says what to register."""
    from temporalio.client import WorkflowFailureError

    client = await _connect(cluster)
    queue = f"half-{uuid.uuid4().hex[:8]}"
    loaded = noetl_temporal.load_playbook_text(SMALL_PLAYBOOK, source="<test>")
    async with Worker(client, task_queue=queue, workflows=[noetl_temporal.PlaybookWorkflow],
                      activities=noetl_temporal.ACTIVITIES):
        handle = await noetl_temporal.start_execution(client, loaded.playbook, task_queue=queue,
                                                      execution_timeout_s=60)
        with pytest.raises(WorkflowFailureError) as failure:
            await asyncio.wait_for(handle.result(), timeout=60)
    message = str(failure.value.cause)
    assert "noetl.persist_events" in message and "noetl_temporal.registration()" in message, message


async def test_without_the_claim_check_a_huge_result_is_a_located_task_error(cluster, caplog):
    """A client on a converter without our claim check: the worker says so at start, and a
    result over Temporal's 2 MB limit fails its step at once with where and why, instead of
    being retried (TMPRL1103) until its attempts run out."""
    from temporalio.converter import DataConverter

    client = await Client.connect(cluster.address, namespace=NAMESPACE,
                                  data_converter=DataConverter(payload_codec=EncryptingCodec()))
    queue = f"plain-{uuid.uuid4().hex[:8]}"
    loaded = noetl_temporal.load_playbook_text(PLAYBOOK, source="<test>")
    with caplog.at_level("WARNING", logger="noetl_temporal"):
        async with noetl_temporal.build_worker(client, task_queue=queue):
            report = await noetl_temporal.run_with_client(client, loaded.playbook, task_queue=queue, worker=False,
                                                          execution_timeout_s=60)
    assert "has no noetl claim check" in caplog.text
    assert report.state == "FAILED"
    assert "the result of task 'start_task' of step 'start'" in (report.error or ""), report.error
    assert "2 MB payload limit" in (report.error or "")
    attempts = [e["attempt"] for e in report.events
                if e["event_type"] == "task.attempt.started" and e["entity_id"] == "start_task"]
    assert attempts == [1], "an oversized result is not retried"


async def test_the_worker_command_runs_with_the_users_codec(cluster, tmp_path):
    """`noetl-temporal worker --codec`: a worker process of the CLI in the same deployment."""
    import signal
    import sqlite3

    client = await _connect(cluster)
    queue = f"cli-{uuid.uuid4().hex[:8]}"
    events_db = Path(default_event_store_url())   # the tests' store, shared with this client (its payloads)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", cluster.address, "--namespace", NAMESPACE,
        "--task-queue", queue, "--codec", CODEC, cwd=REPO, env=env, stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None
        line = await asyncio.wait_for(proc.stderr.readline(), timeout=60)
        assert b"worker polling" in line, line
        loaded = noetl_temporal.load_playbook_text(PLAYBOOK, source="<test>")
        handle = await noetl_temporal.start_execution(client, loaded.playbook, task_queue=queue,
                                                      payload={"customer": SECRET}, execution_timeout_s=60)
        result = await asyncio.wait_for(handle.result(), timeout=60)
        assert result["state"] == "COMPLETED"
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), timeout=30)
    assert _plaintext_in_history(await handle.fetch_history()) == []
    with sqlite3.connect(events_db) as conn:
        rows = conn.execute("SELECT * FROM noetl_events WHERE execution_id = ?", (handle.id,)).fetchall()
    assert rows and not [row for row in rows if SECRET in repr(row)]
