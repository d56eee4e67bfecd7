"""Metrics (Prometheus, on ``noetl-temporal worker --metrics-port``) and OpenTelemetry tracing,
both on the real dev server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import textwrap
import time

import httpx
import pytest

from noetl_temporal.client.connect import Target, connect, start_execution
from noetl_temporal.client.devserver import free_port
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text

pytestmark = pytest.mark.temporal

LOOP = """
metadata: {name: metered}
workload: {items: [1, 2, 3]}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: n, spec: {mode: parallel}}
    tool: {kind: python, code: "result = n * 2", input: {n: "{{ n }}"}}
    next: {arcs: [{step: flaky}]}
  - step: flaky
    tool:
      kind: python
      code: "raise RuntimeError('no')"
      spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 2, delay: 0}}]}}
"""


def samples(text: str, name: str) -> dict[str, float]:
    """``{labels: value}`` of one metric in the Prometheus text format."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        match = re.match(rf"^{name}(\{{.*\}})? ([0-9.e+-]+)$", line)
        if match:
            out[match.group(1) or ""] = float(match.group(2))
    return out


def total(found: dict[str, float], **labels: str) -> float:
    return sum(v for k, v in found.items() if all(f'{key}="{value}"' in k for key, value in labels.items()))


async def scrape(port: int) -> str:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert response.status_code == 200
    return response.text


@contextlib.asynccontextmanager
async def worker_process(temporal, task_queue: str, port: int):
    """``noetl-temporal worker --metrics-port`` as its own process (killed by its pid)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", temporal.address,
        "--task-queue", task_queue, "--metrics-port", str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=dict(os.environ),
        start_new_session=True)
    try:
        line = await asyncio.wait_for(proc.stderr.readline(), timeout=60)
        assert b"worker polling" in line and f":{port}/metrics".encode() in line, line
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), timeout=15)
        except TimeoutError:
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()


async def test_worker_serves_sdk_and_noetl_metrics_on_its_metrics_port(temporal, task_queue):
    port = free_port()
    async with worker_process(temporal, task_queue, port):
        before = await scrape(port)
        assert total(samples(before, "noetl_executions_total")) == 0
        playbook = load_playbook_text(textwrap.dedent(LOOP)).playbook
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)
        output = await workflow_output(handle)
        assert output["state"] == "FAILED"     # flaky fails twice: the run fails

        deadline = time.monotonic() + 20   # the SDK exports on its own schedule
        while True:
            text = await scrape(port)
            executions = samples(text, "noetl_executions_total")
            if total(executions, state="FAILED") >= 1 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    assert total(executions, state="RUNNING") == 1 and total(executions, state="FAILED") == 1
    attempts = samples(text, "noetl_task_attempts_total")
    assert total(attempts, kind="python", outcome="ok") == 3            # the loop's iterations
    assert total(attempts, kind="python", outcome="retry") == 1         # flaky: a policy retry ...
    assert total(attempts, kind="python", outcome="error") == 1         # ... then its last attempt
    loops = samples(text, "noetl_loop_iterations_total")
    assert total(loops, outcome="done") == 3
    assert sum(samples(text, "noetl_event_store_write_seconds_count").values()) >= 1
    # and the SDK's own metrics, from the same endpoint
    # a playbook that ends FAILED is a failed workflow to Temporal's metrics too (the alert an
    # operator already has on workflow_failed sees it)
    assert sum(samples(text, "temporal_workflow_failed_total").values()) >= 1
    assert sum(samples(text, "temporal_workflow_completed_total").values()) == 0
    assert "temporal_activity_execution_latency" in text


def test_a_taken_metrics_port_is_a_clear_error():
    import socket
    import subprocess

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", "127.0.0.1:1",
                               "--metrics-port", str(port)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"cannot serve metrics on 127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ tracing

_EXPORTER = None


def span_exporter():
    """One in-memory exporter behind the global tracer provider (set once per process)."""
    global _EXPORTER
    if _EXPORTER is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    return _EXPORTER


async def test_tracing_spans_cover_the_start_the_workflow_and_each_task(temporal, task_queue):
    pytest.importorskip("opentelemetry.sdk", reason="pip install -e '.[dev]' (opentelemetry-sdk)")
    exporter = span_exporter()
    exporter.clear()
    client = await connect(Target(address=temporal.address, task_queue=task_queue), tracing=True)
    playbook = load_playbook_text(textwrap.dedent("""
    metadata: {name: traced}
    workflow:
      - step: a
        tool: {kind: python, code: "result = 1"}
        next: {arcs: [{step: b}]}
      - step: b
        tool: {kind: python, code: "result = 2"}
    """)).playbook
    report = await run_with_client(client, playbook, task_queue=task_queue, execution_timeout_s=60)
    assert report.state == "COMPLETED"
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert "StartWorkflow:NoetlPlaybook" in names and "RunWorkflow:NoetlPlaybook" in names
    assert names.count("RunActivity:noetl.run_task") == 2
    start = next(s for s in spans if s.name == "StartWorkflow:NoetlPlaybook")
    assert start.attributes["temporalWorkflowID"] == report.execution_id
    # one trace from the start down to every task, across the client/worker boundary
    run_activities = [s for s in spans if s.name == "RunActivity:noetl.run_task"]
    assert {s.context.trace_id for s in run_activities} == {start.context.trace_id}
    # each task's span says which step and task it ran (the name is the activity type's)
    assert sorted((s.attributes["noetl.step"], s.attributes["noetl.task"], s.attributes["noetl.tool_kind"])
                  for s in run_activities) == [("a", "a_task", "python"), ("b", "b_task", "python")]
    assert {s.attributes["noetl.execution_id"] for s in run_activities} == {report.execution_id}


async def test_without_tracing_no_spans(temporal, task_queue):
    pytest.importorskip("opentelemetry.sdk")
    exporter = span_exporter()
    exporter.clear()
    client = await connect(Target(address=temporal.address, task_queue=task_queue), tracing=False)
    playbook = load_playbook_text("workflow:\n  - step: a\n    tool: {kind: noop}\n").playbook
    report = await run_with_client(client, playbook, task_queue=task_queue, execution_timeout_s=60)
    assert report.state == "COMPLETED" and exporter.get_finished_spans() == ()
