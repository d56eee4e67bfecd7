"""The test clock of ``noetl-temporal test --temporal`` (docs/testing-playbooks.md, "Time"):
hours of step timeout, sleep and backoffs (of a task activity and of a fast-path task) run in
seconds, and the report is the default mode's, failure for failure. The default run's subset
of ``test_modes_agree.py`` (scale tier), which runs the whole shared set."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: hours of virtual time: a step timeout, a sleep, hour-long backoffs of a task activity and
#: of a fast-path (``spec.local``) task, whose waits are workflow timers
CLOCK_PLAYBOOK = """\
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: clock, path: tests/clock}
    workflow:
      - step: call
        tool:
          - get:
              kind: http
              url: http://127.0.0.1:9/x
              spec:
                policy:
                  rules:
                    - when: "{{ output.status == 'error' }}"
                      then: {do: retry, attempts: 3, delay: 3600}
        next: {arcs: [{step: quick}]}
      - step: quick
        tool:
          - get:
              kind: http
              url: http://127.0.0.1:9/y
              spec:
                local: true
                policy:
                  rules:
                    - when: "{{ output.status == 'error' }}"
                      then: {do: retry, attempts: 3, delay: 3600, backoff: exponential}
        next: {arcs: [{step: nap}]}
      - step: nap
        tool: {kind: shell, cmd: sleep 36000}
        next: {arcs: [{step: guarded}]}
      - step: guarded
        spec: {timeout: 3600}
        tool: {kind: shell, cmd: sleep 86400}
        next:
          arcs:
            - {step: late, when: "{{ event.name == 'step.failed' }}"}
      - step: late
        tool: {kind: noop, result: done}
    """

CLOCK_CASES = """\
    playbook: clock.yaml
    cases:
      - name: hours of backoff, a sleep and a step timeout
        mocks:
          call.get: [{error: boom}, {error: boom}, {result: {ok: true}}]
          quick.get: [{error: boom}, {error: boom}, {result: {ok: 1}}]
          nap: {delay: 10h}
          guarded: {delay: 1d}
        expect:
          attempts: {call.get: 3, quick.get: 3}
          route: [call, quick, nap, guarded, late]
          status: COMPLETED
          events: [task.attempt.failed, task.attempt.failed, task.done, step.failed, playbook.finished]
      - name: the timeout, wrongly expected not to fire
        mocks:
          call.get: {result: {ok: true}}
          quick.get: {result: {ok: 1}}
          nap: {delay: 1h}
          guarded: {delay: 2d}
        expect: {route: [call, quick, nap, guarded], events: [step.done, nothing]}
    """


def report(*args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "test", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    # timings differ (and so the summary line's padding), nothing else may
    return proc.returncode, re.sub(r"=+", "=", re.sub(r"\(\d+ ms\)| in \d+\.\d+s ", "", proc.stdout))


def clock_files(folder: Path) -> Path:
    (folder / "clock.yaml").write_text(textwrap.dedent(CLOCK_PLAYBOOK), encoding="utf-8")
    cases = folder / "clock.test.yaml"
    cases.write_text(textwrap.dedent(CLOCK_CASES), encoding="utf-8")
    return cases


def test_hours_of_waiting_take_seconds_on_temporal_and_both_modes_agree(tmp_path: Path) -> None:
    cases = str(clock_files(tmp_path))
    code, default = report(cases)
    assert code == 1 and "1 passed, 1 failed" in default, default
    assert "hours of backoff, a sleep and a step timeout PASSED" in default
    started = time.monotonic()
    temporal_code, temporal = report("--temporal", cases)
    took = time.monotonic() - started
    assert (temporal_code, temporal) == (code, default)
    # about 17 virtual hours (and 2 days of a task the timeout cuts short) in seconds: the dev
    # server's start, a round trip per attempt, the test clock's scaled waits
    assert took < 90, took


WORKFLOW_KINDS_PLAYBOOK = """\
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: calls, path: tests/calls}
    workflow:
      - step: child
        tool: {kind: playbook, path: nowhere.yaml}
        set:
          ctx.child: "{{ child.n }}"
        next: {arcs: [{step: charge}]}
      - step: charge
        tool: {kind: activity, name: charge_card, task_queue: billing, args: [42]}
        next: {arcs: [{step: ship}]}
      - step: ship
        tool: {kind: workflow, name: Shipping, task_queue: shipping}
        set:
          ctx.shipped: "{{ ship.id }}"
    """

WORKFLOW_KINDS_CASES = """\
    playbook: calls.yaml
    cases:
      - name: a sub-playbook, an activity and a workflow, all mocked
        mocks:
          child: {result: {n: 7}}
          charge: {delay: 3h, result: {ok: true}}
        kinds:
          workflow: {result: {id: s-1}}
        expect:
          status: COMPLETED
          route: [child, charge, ship]
          ctx: {child: 7, shipped: s-1}
      - name: a failing mock of the activity, wrongly expected to pass
        mocks:
          child: {result: {n: 7}}
          charge: {error: {type: declined, message: card declined}}
        kinds:
          workflow: {result: {id: s-1}}
        expect: {status: COMPLETED, events: [task.failed, nothing]}
    """


def test_mocks_of_tasks_the_workflow_runs_itself_apply_on_temporal(tmp_path: Path) -> None:
    """Neither the sub-playbook's file nor the activity or workflow exists: only the mocks
    answer, in both modes alike."""
    (tmp_path / "calls.yaml").write_text(textwrap.dedent(WORKFLOW_KINDS_PLAYBOOK), encoding="utf-8")
    cases = tmp_path / "calls.test.yaml"
    cases.write_text(textwrap.dedent(WORKFLOW_KINDS_CASES), encoding="utf-8")
    code, default = report(str(cases))
    assert code == 1 and "1 passed, 1 failed" in default, default
    assert (code, default) == report("--temporal", str(cases))
