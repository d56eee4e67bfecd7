"""Executions are readable in the Temporal UI: ids, summary and details, memo, current
details, search attributes, read back through the UI server's own HTTP API and drawn by a
headless Chromium.

Runs its own dev server with the UI (the session one is headless).
"""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import os
import re
import shutil
import struct
import textwrap
import time
import uuid
import zlib
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from temporalio.client import Client

import noetl_temporal
from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.devserver import DEV_SERVER_ARGS, EmbeddedTemporal, free_port
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.dsl.models import playbook_definition
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.catalog import Catalog
from noetl_temporal.store.event_store import open_event_store
from noetl_temporal.workflow import labels
from noetl_temporal.workflow.search_attributes import (
    NOETL_STATE,
    PARENT_EXECUTION_ID,
    PLAYBOOK_NAME,
)
from tests.api.conftest import app_client, make_settings, wait_for
from tests.cli.test_cli_control import cli
from tests.support.codec_server import CODEC, CodecServer
from tests.support.user_codec import EncryptingCodec
from tests.support.webdriver import Browser

pytestmark = pytest.mark.temporal

CHILD = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: ui_child}
workload: {n: 1}
workflow:
  - step: double
    tool: {kind: python, code: "result = n * 2", input: {n: "{{ workload.n }}"}}
"""

PARENT = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: UI Parent, path: demo/ui-parent}
workflow:
  - step: call
    tool:
      - {name: child, kind: playbook, path: CHILD_PATH, input: {n: 4}, return_step: double}
    next: {arcs: [{step: done}]}
  - step: done
    tool: {kind: noop, result: "{{ call }}"}
"""

SLOW_LOOP = """
metadata: {name: slow-loop}
workload: {items: [0, 1, 2, 3, 4, 5]}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: i, spec: {mode: sequential}}
    tool: {kind: python, code: "import time; time.sleep(0.4); result = i", input: {i: "{{ i }}"}}
"""


@pytest_asyncio.fixture(scope="module")
async def ui():
    async with EmbeddedTemporal(ui=True) as env:
        # The UI server can start before the frontend listens; its gRPC connection then backs
        # off for a second or two and its API answers 503. Wait for it, as a person would.
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(base_url=env.ui_url, timeout=5) as http:
            while (await http.get(f"/api/v1/namespaces/{env.namespace}")).status_code != 200:
                assert time.monotonic() < deadline, "the Temporal UI server never reached the frontend"
                await asyncio.sleep(0.1)
        yield env
    gc.collect()
    await asyncio.sleep(0.5)


async def ui_get(ui, path: str, **params) -> dict:
    """The Temporal UI server's HTTP API (what the browser app reads)."""
    async with httpx.AsyncClient(base_url=ui.ui_url, timeout=20) as http:
        response = await http.get(f"/api/v1/namespaces/{ui.namespace}{path}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def decoded_attributes(info: dict) -> dict:
    """searchAttributes.indexedFields as plain values (each is a JSON payload, base64)."""
    fields = ((info.get("searchAttributes") or {}).get("indexedFields")) or {}
    return {k: json.loads(base64.b64decode(v["data"])) for k, v in fields.items()}


async def test_a_run_and_its_sub_playbook_read_well_in_the_temporal_ui(ui, tmp_path):
    event_store = open_event_store()
    (tmp_path / "child.yaml").write_text(textwrap.dedent(CHILD))
    parent_text = textwrap.dedent(PARENT).replace("CHILD_PATH", str(tmp_path / "child.yaml"))
    queue = f"tq-{uuid.uuid4().hex[:10]}"
    settings = make_settings(ui, queue, Catalog(sqlite_path=tmp_path / "catalog.db"), event_store)
    async with build_worker(ui.client, task_queue=queue, event_store=event_store):
        async with app_client(settings) as api:
            started = await api.post("/executions", json={"playbook": parent_text})
            assert started.status_code == 202, started.text
            execution_id = started.json()["execution_id"]
            assert re.fullmatch(r"ui-parent-[0-9a-f]{12}", execution_id)   # the playbook's name, slugged
            handle = ui.client.get_workflow_handle(execution_id)
            output = await handle.result()
            assert output["state"] == "COMPLETED" and output["steps"]["done"]["result"] == 8
            # the child id also carries its playbook's name, and every reader takes it
            events = (await api.get(f"/executions/{execution_id}/events", params={"limit": 1000})).json()["events"]
            child_id = next(e["payload"]["outcome"]["meta"]["child_execution_id"] for e in events
                            if e["event_type"] == "task.done" and e["entity_id"] == "child")
            assert re.fullmatch(r"ui-child-[0-9a-f]{12}", child_id)
            for path in (f"/executions/{child_id}", f"/executions/{child_id}/status", f"/executions/{child_id}/events"):
                assert (await api.get(path)).status_code == 200, path

    code, out, err = await cli("status", child_id, "--address", ui.address, "--json")
    assert code == 0 and json.loads(out)["state"] == "COMPLETED", err

    # summary, details (with the API link and the definition hash) and memo
    desc = await handle.describe()
    summary, details = await desc.static_summary(), await desc.static_details()
    assert summary == "NoETL playbook UI Parent (demo/ui-parent)"
    assert f"http://api/executions/{execution_id}" in details and "sha256" in details
    memo = await desc.memo()
    playbook_hash = memo[labels.HASH_MEMO]
    assert re.fullmatch(r"[0-9a-f]{64}", playbook_hash) and playbook_hash[:16] in details
    assert playbook_hash == labels.definition_hash(
        playbook_definition(load_playbook_text(parent_text).playbook))

    # search attributes, through the SDK ...
    child_desc = await ui.client.get_workflow_handle(child_id).describe()
    attrs = child_desc.typed_search_attributes
    assert attrs.get(PARENT_EXECUTION_ID) == execution_id and attrs.get(PLAYBOOK_NAME) == "ui_child"
    assert attrs.get(NOETL_STATE) == "COMPLETED"
    assert "sub-playbook" in (await child_desc.static_summary())

    # ... and through the Temporal UI server's HTTP API, which the UI itself reads
    body = await ui_get(ui, f"/workflows/{execution_id}")
    info = body["workflowExecutionInfo"]
    expected = {"NoetlPlaybookName": "UI Parent", "NoetlPlaybookPath": "demo/ui-parent", "NoetlState": "COMPLETED"}
    assert expected.items() <= decoded_attributes(info).items()
    meta = body["executionConfig"]["userMetadata"]
    assert json.loads(base64.b64decode(meta["summary"]["data"])) == summary

    async def listed():
        page = await ui_get(ui, "/workflows", query=f'NoetlParentExecutionId = "{execution_id}"')
        return [w["execution"]["workflowId"] for w in page.get("executions") or []]

    assert await wait_for(listed, what="the child in the UI's filtered list") == [child_id]


async def test_current_details_follow_a_running_loop(ui, task_queue):
    playbook = load_playbook_text(textwrap.dedent(SLOW_LOOP)).playbook
    async with build_worker(ui.client, task_queue=task_queue):
        handle = await start_execution(ui.client, playbook, task_queue=task_queue, execution_timeout_s=60,
                                       search_attributes=True)
        seen = set()
        while True:
            meta = await handle.query("__temporal_workflow_metadata")
            seen.add(meta.current_details)
            desc = await handle.describe()
            if desc.status is not None and desc.status.name != "RUNNING":
                break
            await asyncio.sleep(0.1)
    progress = {m.group(1) for text in seen for m in [re.search(r"`each` (\d)/6", text)] if m}
    assert len(progress) >= 3, seen           # 0/6 .. 5/6 as iterations finish
    assert any(text.startswith("**RUNNING**") for text in seen)


async def test_event_persistence_is_labelled_and_history_does_not_grow(ui, task_queue):
    from noetl_temporal.dsl import load_playbook

    playbook = load_playbook(Path(__file__).resolve().parents[2] / "examples" / "hello.yaml").playbook
    report = await run_with_client(ui.client, playbook, task_queue=task_queue, search_attributes=True,
                                   execution_timeout_s=60)
    assert report.state == "COMPLETED"
    history = await ui.client.get_workflow_handle(report.execution_id).fetch_history()
    # measured before the UI work (ids, details, memo, search attributes): 29 events
    assert len(history.events) <= 29
    # local-activity markers (patch markers carry no summary); events are persisted in batches
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")
               and e.marker_recorded_event_attributes.marker_name == "core_local_activity"]
    assert markers
    for marker in markers:  # every persist marker says what it is in the timeline
        summary = json.loads(marker.user_metadata.summary.data)
        assert summary.startswith("noetl: store event"), summary
    # Batching is said by the workflow input (engine/behaviours.py), so a new execution
    # carries no patch marker and no TemporalChangeVersion search attribute for it.
    assert not [e for e in history.events if e.HasField("marker_recorded_event_attributes")
                and e.marker_recorded_event_attributes.marker_name == "core_patch"]
    upserts = [e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
               for e in history.events if e.HasField("upsert_workflow_search_attributes_event_attributes")]
    assert not [fields for fields in upserts if "TemporalChangeVersion" in fields]


async def test_a_short_run_writes_its_events_once_at_the_close(temporal, task_queue):
    """behaviours.DEFERRED_FIRST_FLUSH: no store write in the first workflow task (it held
    back the first activity); a run shorter than the flush interval writes once, at the end,
    and every event is in the store."""
    playbook = load_playbook_text(textwrap.dedent("""
        workflow:
          - step: start
            tool: {kind: shell, cmd: "true"}
            next: {arcs: [{step: end}]}
          - step: end
            tool: {kind: noop}
    """)).playbook
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)
    assert report.state == "COMPLETED"
    history = await temporal.client.get_workflow_handle(report.execution_id).fetch_history()
    writes = [e for e in history.events if e.HasField("marker_recorded_event_attributes")
              and e.marker_recorded_event_attributes.marker_name == "core_local_activity"]
    scheduled = [i for i, e in enumerate(history.events) if e.HasField("activity_task_scheduled_event_attributes")]
    assert len(writes) == 1 and history.events.index(writes[0]) > scheduled[0]
    stored = open_event_store().read(report.execution_id, limit=1000)
    assert [e["seq"] for e in stored] == list(range(1, len(report.events) + 1))


# ------------------------------------------------------------------ headless Chromium

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw (filtered) scanlines of a PNG: enough to tell blank from drawn."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="chromium is not installed (apt-get install chromium); CI installs it")
async def test_headless_chromium_draws_a_run_page(ui, task_queue, tmp_path):
    assert CHROMIUM, "chromium is required in CI (.ci/run installs it)"
    playbook = load_playbook_text(textwrap.dedent(SLOW_LOOP).replace("0.4", "0.01")).playbook
    report = await run_with_client(ui.client, playbook, task_queue=task_queue, search_attributes=True,
                                   execution_timeout_s=60)
    desc = await ui.client.get_workflow_handle(report.execution_id).describe()
    url = f"{ui.ui_url}/namespaces/{ui.namespace}/workflows/{report.execution_id}/{desc.run_id}/history"
    shot = tmp_path / "run.png"
    started = time.monotonic()
    _, err = await _chromium(tmp_path, url, f"--screenshot={shot}")
    assert shot.exists(), f"no screenshot after {time.monotonic() - started:.0f}s: {err.decode()[-2000:]}"
    if os.environ.get("NOETL_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["NOETL_KEEP_SCREENSHOT"])
    width, height, raw = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 1000)
    rows = [raw[i * (len(raw) // height) + 1:(i + 1) * (len(raw) // height)] for i in range(height)]
    assert len(set(rows)) > height // 10, "the page is (nearly) blank"   # many different rows: drawn
    assert len(set(raw)) > 50                                            # many different colours/bytes


async def _chromium(tmp_path, url: str, *args: str) -> tuple[bytes, bytes]:
    """Headless Chromium on ``url`` with ``args`` (a screenshot, a DOM dump); its stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--hide-scrollbars", "--window-size=1400,1000", "--virtual-time-budget=15000",
        f"--user-data-dir={tmp_path / 'profile'}", *args, url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    except TimeoutError:
        proc.kill()
        raise
    return out, err


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="chromium is not installed (apt-get install chromium); CI installs it")
async def test_a_failed_playbook_is_failed_in_the_temporal_ui(ui, task_queue, tmp_path):
    """What an operator sees: the UI's API says Failed with our PlaybookFailed error, and its
    detail page draws a "Failed" badge (no green "Completed")."""
    assert CHROMIUM, "chromium is required in CI (.ci/run installs it)"
    playbook = load_playbook_text(textwrap.dedent("""
        metadata: {name: ui-fails}
        workflow:
          - step: boom
            tool: {kind: python, code: "raise ValueError('ui sees this')"}
    """)).playbook
    report = await run_with_client(ui.client, playbook, task_queue=task_queue, search_attributes=True,
                                   execution_timeout_s=60)
    assert report.state == "FAILED"
    body = await ui_get(ui, f"/workflows/{report.execution_id}")
    info = body["workflowExecutionInfo"]
    assert info["status"] == "WORKFLOW_EXECUTION_STATUS_FAILED"
    assert decoded_attributes(info)["NoetlState"] == "FAILED"
    history = await ui_get(ui, f"/workflows/{report.execution_id}/history")
    failed = [e for e in history["history"]["events"] if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED"]
    failure = failed[0]["workflowExecutionFailedEventAttributes"]["failure"]
    assert failure["applicationFailureInfo"]["type"] == "PlaybookFailed" and "ui sees this" in failure["message"]

    url = f"{ui.ui_url}/namespaces/{ui.namespace}/workflows/{report.execution_id}/{info['execution']['runId']}/history"
    shot = tmp_path / "failed.png"
    await _chromium(tmp_path, url, f"--screenshot={shot}")
    assert shot.exists()
    if os.environ.get("NOETL_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["NOETL_KEEP_SCREENSHOT"].replace(".png", "-failed.png"))
    width, height, _ = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 1000)
    dom = (await _chromium(tmp_path, url, "--dump-dom"))[0].decode()   # the page as the UI drew it
    badges = [re.sub(r"<!--.*?-->|<[^>]+>", " ", dom[m.end():m.end() + 400]).split()[:1]
              for m in re.finditer(r'data-testid="execution-status"[^>]*>', dom)]
    assert badges == [["Failed"]], badges   # the badge's first word


SECRET_REPORT = """
metadata: {name: secret-report, path: demo/secret-report}
workflow:
  - step: greet
    tool: {kind: python, code: "result = {'said': 'hello ' + who}", input: {who: "{{ workload.who }}"}}
"""


async def test_the_ui_reads_an_encrypted_run_through_the_codec_server(tmp_path):
    """A run whose payloads the user's codec encrypted: the Temporal UI, configured with the
    codec endpoint (``--ui-codec-endpoint``), shows ciphertext and no summary until
    ``noetl-temporal codec-server`` runs, then the input, result and summary as plaintext.
    The screenshots (summary tab, history) are kept as test artifacts: in the test's tmp_path, and
    at ``$NOETL_KEEP_SCREENSHOT`` with ``-codec`` / ``-codec-history`` before ``.png``."""
    reason = Browser.skip_reason()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)
    secret = "plaintext-marker-4711"
    codec_port, ui_port = free_port(), free_port()
    server_args = (*DEV_SERVER_ARGS, "--ui-codec-endpoint", f"http://127.0.0.1:{codec_port}")
    async with EmbeddedTemporal(ui=True, ui_port=ui_port, server_args=server_args) as env:
        client = await Client.connect(env.address, namespace=env.namespace,
                                      data_converter=noetl_temporal.data_converter(EncryptingCodec()))
        playbook = load_playbook_text(textwrap.dedent(SECRET_REPORT)).playbook
        report = await run_with_client(client, playbook, task_queue=f"tq-{uuid.uuid4().hex[:10]}",
                                       payload={"who": secret}, search_attributes=True, execution_timeout_s=60)
        assert report.state == "COMPLETED", report.error
        run_id = (await client.get_workflow_handle(report.workflow_id).describe()).run_id
        page = f"{env.ui_url}/namespaces/{env.namespace}/workflows/{report.workflow_id}/{run_id}"
        summary = "NoETL playbook secret-report (demo/secret-report)"
        text = "return document.body.innerText"
        with Browser(1400, 1000) as browser:
            browser.open(f"{page}/history")   # the codec server is not running yet
            browser.wait_js(f"{text}.includes('Codec Server could not connect')", timeout=60,
                            what="the UI's codec error")
            seen = browser.js(text)
            assert secret not in seen and summary not in seen   # ciphertext, no summary
            assert '"behaviours": [' not in seen   # the input: ciphertext too
            codec_server = CodecServer("--codec", CODEC, "--cors-origin", env.ui_url, port=codec_port)
            try:
                browser.open(f"{page}/history")
                browser.wait_js(f"{text}.includes('hello {secret}')", timeout=60, what="the decoded result")
                browser.wait_js(f"{text}.includes({json.dumps(summary)})", timeout=60, what="the decoded summary")
                seen = browser.js(text)
                # the input, as plaintext JSON: the UI shows its first lines only (the behaviours
                # list comes first and grows with each release, so the payload's `who` is below them)
                assert '"behaviours": [' in seen and '"loop-fail-fast-fails-step"' in seen
                assert "greet / greet_task (python)" in seen   # an activity's summary
                browser.screenshot(tmp_path / "codec-history.png")   # the input and result, readable
                # The summary and details tab: the UI renders each as markdown in a frame of its own.
                browser.open(f"{page}/user-metadata")
                frames = ("[...document.querySelectorAll('iframe')].map(f => { try { return f.contentDocument.body"
                          ".innerText } catch (e) { return '' } }).join(' ')")
                browser.wait_js(f"return ({frames}).includes({json.dumps(summary)})", timeout=60,
                                what="the summary tab")
                framed = browser.js(f"return {frames}")
                assert "demo/secret-report" in framed and "sha256" in framed   # the details
                shot = tmp_path / "codec.png"
                browser.screenshot(shot)
            finally:
                log = codec_server.stop()
    assert "Traceback" not in log
    if os.environ.get("NOETL_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["NOETL_KEEP_SCREENSHOT"].replace(".png", "-codec.png"))
        shutil.copy(tmp_path / "codec-history.png", os.environ["NOETL_KEEP_SCREENSHOT"].replace(".png", "-codec-history.png"))
    width, height, raw = png_pixels(shot.read_bytes())
    assert width == 1400 and height > 600   # the window less the browser's own bars
    assert len(set(raw)) > 50   # drawn, not blank


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="chromium is not installed (apt-get install chromium); CI installs it")
async def test_a_playbook_schedule_is_on_the_temporal_ui_schedules_page(ui, task_queue, tmp_path):
    """`noetl-temporal schedule create` makes a real Temporal Schedule: the UI's API lists it
    with its spec and the UI's schedules page draws it (docs/schedules.md)."""
    assert CHROMIUM, "chromium is required in CI (.ci/run installs it)"
    path = tmp_path / "hourly.yaml"
    path.write_text("metadata: {name: ui-hourly}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n")
    name = f"ui-hourly-{uuid.uuid4().hex[:6]}"
    code, out, err = await cli("schedule", "create", name, str(path), "--cron", "0 * * * *", "--paused",
                               "--address", ui.address, "--task-queue", task_queue)
    assert code == 0, err
    try:
        async def listed():
            body = await ui_get(ui, "/schedules")
            return [s for s in body.get("schedules") or [] if s["scheduleId"] == name]

        [entry] = await wait_for(listed, timeout=30, what="the schedule in the UI's list")
        assert entry["info"]["workflowType"]["name"] == "NoetlPlaybook" and entry["info"]["paused"], entry
        assert all(t.endswith(":00:00Z") for t in entry["info"]["futureActionTimes"]), entry   # on the hour
        dom = (await _chromium(tmp_path, f"{ui.ui_url}/namespaces/{ui.namespace}/schedules", "--dump-dom"))[0]
        assert name in dom.decode(), "the schedules page does not show the schedule"
    finally:
        code, out, err = await cli("schedule", "delete", name, "--address", ui.address)
        assert code == 0, err
