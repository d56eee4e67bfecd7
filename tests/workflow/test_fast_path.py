"""The fast path (``spec.local: true``: tasks as local activities) and the python tool's
isolation, on the real dev server with a real worker."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.temporal


def of(report, event_type, entity=None):
    return [e for e in report.events if e["event_type"] == event_type
            and (entity is None or e["entity_id"] == entity)]


async def history_of(temporal, report):
    handle = temporal.client.get_workflow_handle(report.execution_id)
    return (await handle.fetch_history()).events


async def test_a_chain_on_the_fast_path_runs_as_local_activities(run_yaml, temporal):
    report = await run_yaml("""
    executor: {spec: {local: true}}
    workflow:
      - step: a
        tool: {kind: python, code: "result = 1"}
        next: {arcs: [{step: b}]}
      - step: b
        tool: {kind: python, code: "def main(x):\\n    return x + 1", args: {x: "{{ a }}"}}
        next: {arcs: [{step: c}]}
      - step: c
        spec: {local: false}
        tool: {kind: python, code: "def main(x):\\n    return x * 10", args: {x: "{{ b }}"}}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["c"]["result"] == 20
    assert [e["entity_id"] for e in of(report, "step.done")] == ["a", "b", "c"]
    assert len(of(report, "task.done")) == 3
    events = await history_of(temporal, report)
    markers = [e for e in events if e.HasField("marker_recorded_event_attributes")
               and e.marker_recorded_event_attributes.marker_name == "core_local_activity"]
    scheduled = [e for e in events if e.HasField("activity_task_scheduled_event_attributes")]
    task_markers = [m for m in markers if b"noetl.run_task_local" in m.SerializeToString()]
    assert len(task_markers) == 2  # a and b ran locally
    assert [e.activity_task_scheduled_event_attributes.activity_type.name for e in scheduled] == ["noetl.run_task"]


async def test_a_policy_retry_on_the_fast_path(run_yaml, temporal, tmp_path):
    counter = tmp_path / f"attempts-{uuid.uuid4().hex}"
    report = await run_yaml(f"""
    workflow:
      - step: flaky
        tool:
          kind: python
          spec:
            local: true
            policy:
              rules:
                - when: "{{{{ output.status == 'error' }}}}"
                  then: {{do: retry, attempts: 4, delay: 0.2}}
          code: |
            p = {str(counter)!r}
            n = int(open(p).read()) + 1 if os.path.exists(p) else 1
            open(p, 'w').write(str(n))
            if n < 3:
                raise RuntimeError(f"attempt {{n}} fails")
            result = n
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["flaky"]["result"] == 3
    assert [e["attempt"] for e in of(report, "task.attempt.failed")] == [1, 2]
    assert of(report, "task.done")[0]["attempt"] == 3
    events = await history_of(temporal, report)
    assert len([e for e in events if e.HasField("timer_started_event_attributes")]) == 2  # the delays


async def test_a_failure_on_the_fast_path_routes_like_any_other(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: boom
        spec: {local: true}
        tool:
          kind: python
          code: "x = 1\\nraise ValueError('nope')"
          spec:
            policy:
              rules:
                - when: "{{ output.status == 'error' }}"
                  then: {do: retry, attempts: 2}
        next:
          arcs:
            - {step: fallback, when: "{{ event.name == 'step.failed' }}"}
      - step: fallback
        spec: {local: true}
        tool: {kind: noop, result: handled}
    """)
    assert report.state == "COMPLETED", report.error
    failed = of(report, "step.failed", "boom")[0]
    error = failed["payload"]["outcome"]["error"]
    assert error["code"] == "ValueError" and "(line 2)" in error["message"]
    assert [e["attempt"] for e in of(report, "task.attempt.failed")] == [1, 2]
    assert report.steps["fallback"]["result"] == "handled"


async def test_broken_python_tasks_leave_the_worker_and_the_next_task_unharmed(run_yaml):
    """Fork server mode: a segfault, os._exit, sys.exit, an endless loop and a polluter of
    globals, each followed by tasks that must run normally on the same worker."""
    report = await run_yaml("""
    workflow:
      - step: crashes
        tool:
          - segfault: {kind: python, code: "import ctypes\\nctypes.string_at(0)", spec: &cont {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: continue}}]}}}
          - os_exit: {kind: python, code: "import os\\nos._exit(3)", spec: *cont}
          - sys_exit: {kind: python, code: "import sys\\nsys.exit(5)", spec: *cont}
          - hang: {kind: python, timeout: 1, code: "while True:\\n    pass", spec: *cont}
          - pollute: {kind: python, code: "import json, builtins\\njson.dumps = None\\nbuiltins.LEAK = 1\\nresult = 1"}
          - check:
              kind: python
              code: "import json, builtins\\nresult = [json.dumps([1]), hasattr(builtins, 'LEAK')]"
          - trusted: {kind: python, in_worker: true, code: "def main(n):\\n    return n + 1", args: {n: 41}}
    """)
    assert report.state == "COMPLETED", report.error
    failed = {e["entity_id"]: e["payload"]["outcome"]["error"] for e in of(report, "task.failed")}
    assert sorted(failed) == ["hang", "os_exit", "segfault", "sys_exit"], failed
    assert failed["segfault"]["code"] == "SIGSEGV"
    assert failed["os_exit"]["code"] == "ProcessExit"
    assert failed["sys_exit"]["code"] == "SystemExit"
    assert failed["hang"]["kind"] == "timeout"
    done = {e["entity_id"]: e["payload"]["outcome"] for e in of(report, "task.done")}
    assert done["check"]["result"] == ["[1]", False]  # nothing leaked from the polluter
    assert done["trusted"]["result"] == 42



async def test_a_step_timeout_cancels_a_task_on_the_fast_path(run_yaml, tmp_path):
    pid_file = tmp_path / "pid"
    report = await run_yaml(f"""
    workflow:
      - step: slow
        spec: {{local: true, lifecycle: {{timeout_s: 1}}}}
        tool:
          kind: python
          code: "import os, time\\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\\ntime.sleep(60)"
    """)
    assert report.state == "FAILED"
    assert of(report, "step.failed", "slow")
    from tests.support.processes import wait_dead

    assert await wait_dead(int(pid_file.read_text()), 10), "the cancelled task's process survived"
