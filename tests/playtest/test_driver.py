"""The default mode's driver on its own (pure code: the engine, mocks, the virtual clock)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from noetl_temporal.playtest import driver
from noetl_temporal.playtest.spec import case_from_data

LOOPS = """\
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {{name: fanout, path: tests/fanout}}
    workflow:
      - step: start
        tool: {{kind: noop}}
        next: {{spec: {{mode: inclusive}}, arcs: [{{step: a}}, {{step: b}}]}}
      - step: a
        loop: {{in: "{{{{ range({n}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: 1000}}}}
        tool: {{kind: http, url: "http://x/{{{{ i }}}}"}}
      - step: b
        loop: {{in: "{{{{ range({n}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: 1000}}}}
        tool: {{kind: http, url: "http://y/{{{{ i }}}}"}}
    """


# Two loops of 1,000 in flight each: the workflow holds at most 1,500 tasks pending (MAX_PENDING).
@pytest.mark.parametrize(("each", "seconds"), [(700, 10.0), (750, 10.0), (751, 20.0), (1000, 20.0)])
def test_at_most_1500_tasks_are_in_flight_as_in_the_workflow(tmp_path: Path, each: int, seconds: float) -> None:
    path = tmp_path / "fanout.yaml"
    path.write_text(textwrap.dedent(LOOPS.format(n=each)), encoding="utf-8")
    playbook, source = driver.load(str(path))
    case = case_from_data({"kinds": {"http": {"result": 1, "delay": "10s"}}})
    actual = driver.run_case(case, playbook, source)
    assert actual.status == "COMPLETED", actual.reason
    assert actual.attempts == {"a.a_task": each, "b.b_task": each}
    assert actual.elapsed_s == seconds   # one batch of 10 s, or two


def test_a_step_timeout_cancels_a_slow_task_at_its_virtual_time(tmp_path: Path) -> None:
    path = tmp_path / "slow.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: slow, path: tests/slow}
        workflow:
          - step: slow
            spec: {timeout: 60}
            tool: {kind: shell, cmd: sleep 3600}
        """), encoding="utf-8")
    playbook, source = driver.load(str(path))
    actual = driver.run_case(case_from_data({"mocks": {"slow": {"delay": "1h"}}}), playbook, source)
    assert actual.status == "FAILED" and "timeout" in actual.reason
    assert actual.elapsed_s == 60.0
