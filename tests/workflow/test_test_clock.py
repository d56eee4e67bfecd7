"""The test clock (``RunInput.test_clock``, docs/testing-playbooks.md "Time") on the dev server
with a real worker: a test run's hour-long step timeout fires in a fraction of a second and
its events read virtual time; a run without it waits its real timer."""

from __future__ import annotations

import time
from datetime import datetime

PLAYBOOK = """
workflow:
  - step: slow
    spec: {timeout: 3600}
    tool: {kind: shell, cmd: sleep 30}
    next:
      arcs:
        - {step: after, when: "{{ event.name == 'step.failed' }}"}
  - step: after
    tool: {kind: noop, result: done}
"""


def _at(report, event_type: str) -> datetime:
    stamp = next(e["timestamp"] for e in report.events if e["event_type"] == event_type)
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def test_an_hour_long_step_timeout_takes_no_real_hour_and_events_read_virtual_time(run_yaml):
    started = time.monotonic()
    report = await run_yaml(PLAYBOOK, test_clock=True)
    took = time.monotonic() - started
    assert report.state == "COMPLETED", report.error
    assert "after" in report.steps   # reached through slow's step.failed (its timeout)
    assert took < 25, took   # the shell task's 30 s were cut short by the scaled timer
    assert (_at(report, "step.failed") - _at(report, "playbook.started")).total_seconds() >= 3600
    assert (_at(report, "playbook.finished") - _at(report, "step.failed")).total_seconds() < 600


async def test_without_the_test_clock_timers_and_times_are_real(run_yaml):
    report = await run_yaml(PLAYBOOK.replace("timeout: 3600", "timeout: 2"))
    assert report.state == "COMPLETED", report.error
    assert (_at(report, "step.failed") - _at(report, "playbook.started")).total_seconds() < 60
