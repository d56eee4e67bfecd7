"""fail_fast cancels in-flight siblings; step and execution timeouts fail as `timeout`."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.temporal


def of(report, event_type):
    return [e for e in report.events if e["event_type"] == event_type]


async def test_fail_fast_cancels_in_flight_branches_then_runs_final_step(run_yaml, tmp_path):
    marker = tmp_path / "slow-finished"
    t0 = time.monotonic()
    report = await run_yaml(f"""
    executor: {{spec: {{final_step: wrap, failure: {{mode: fail_fast}}}}}}
    workflow:
      - step: start
        tool: {{kind: noop}}
        next: {{spec: {{mode: inclusive}}, arcs: [{{step: slow}}, {{step: bad}}]}}
      - step: slow
        tool: {{kind: shell, cmd: "sleep 90 && touch {marker}"}}
        next: {{arcs: [{{step: after_slow}}]}}
      - step: bad
        tool: {{kind: python, code: "import time; time.sleep(0.5); raise ValueError('bad data')"}}
      - step: after_slow
        tool: {{kind: noop}}
      - step: wrap
        tool: {{kind: noop, result: "{{{{ args.failed_steps_count }}}}"}}
    """)
    assert time.monotonic() - t0 < 45              # did not wait for the slow branch (90 s)
    assert report.state == "FAILED"
    assert report.steps["slow"]["status"] == "CANCELLED"
    assert "after_slow" not in report.steps
    assert report.steps["wrap"]["status"] == "COMPLETED"
    assert not marker.exists()                      # the cancelled task really stopped
    assert "bad data" in report.error


async def test_best_effort_runs_everything_then_fails(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: start
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: slow}, {step: bad}]}
      - step: slow
        tool: {kind: python, code: "import time; time.sleep(1); result = 1"}
        next: {arcs: [{step: after_slow}]}
      - step: bad
        tool: {kind: python, code: "raise ValueError('bad data')"}
      - step: after_slow
        tool: {kind: noop}
    """)
    assert report.state == "FAILED"
    assert report.steps["after_slow"]["status"] == "COMPLETED"


async def test_step_timeout_fails_the_step_with_timeout_kind_and_routes(run_yaml):
    t0 = time.monotonic()
    report = await run_yaml("""
    workflow:
      - step: slow
        spec: {lifecycle: {timeout_s: 1}}
        tool: {kind: shell, cmd: "sleep 90"}
        next:
          arcs:
            - {step: on_timeout, when: "{{ event.error.kind == 'timeout' }}"}
      - step: on_timeout
        tool: {kind: noop, result: handled}
    """)
    assert time.monotonic() - t0 < 45   # 1 s asked, 90 s if ignored (docs/testing.md)
    assert report.state == "COMPLETED"
    failed = of(report, "step.failed")[0]
    assert failed["payload"]["outcome"]["error"]["kind"] == "timeout"
    assert report.steps["on_timeout"]["result"] == "handled"


async def test_execution_timeout_ends_failed(run_yaml):
    report = await run_yaml("""
    executor: {spec: {timeout_s: 2}}
    workflow:
      - step: slow
        tool: {kind: shell, cmd: "sleep 30"}
    """, execution_timeout_s=None)
    assert report.state == "FAILED"
    assert "timed out" in (report.error or "").lower()


async def test_task_timeout_is_an_activity_attempt_timeout(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: slow
        tool:
          kind: shell
          cmd: "sleep 30"
          spec: {timeout: 1}
    """)
    assert report.state == "FAILED"
    assert report.summary["failed_steps"][0]["kind"] == "timeout"
