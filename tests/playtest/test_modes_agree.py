"""``noetl-temporal test`` and ``noetl-temporal test --temporal`` agree: the same report,
case for case and failure for failure (every event type of a run appears in an events
diff), on a shared set of passing and failing cases (docs/testing-playbooks.md)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: cases that fail on purpose: their failures print what each run showed
FAILING = """\
    playbook: {playbook}
    cases:
      - name: every expectation wrong
        payload: {{order_id: 3}}
        mocks:
          fetch.get: [{{error: {{type: http, message: "503", retryable: true}}}}, {{result: {{id: 3, amount: 40}}}}]
          settle: {{delay: 3h}}
          charge: {{result: {{charged: 41}}}}
        expect:
          status: FAILED
          route: [start, fetch, charge, done]
          ctx: {{charged: 40}}
          results: {{charge: {{charged: 40}}, fetch: {{subset: {{amount: 41}}}}}}
          steps: {{review: 1}}
          attempts: {{fetch.get: 1}}
          events: [playbook.finished, playbook.started]
      - name: unmocked
        expect: {{status: COMPLETED}}
      - name: the review branch, wrong ctx
        mocks:
          fetch.get: {{result: {{amount: 500}}}}
        expect: {{ctx: {{review: false}}, events: [nothing]}}
      - name: exhausted retries, wrong reason
        kinds:
          http: {{error: {{type: http, message: "503", retryable: true}}}}
        expect: {{error: "404", attempts: {{fetch.get: 3}}, events: [task.attempt.failed, nothing]}}
    """


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


def test_both_modes_print_the_same_report(tmp_path: Path) -> None:
    failing = tmp_path / "failing.test.yaml"
    failing.write_text(textwrap.dedent(FAILING).format(playbook=REPO / "examples" / "orders.yaml"), encoding="utf-8")
    (tmp_path / "clock.yaml").write_text(textwrap.dedent(CLOCK_PLAYBOOK), encoding="utf-8")
    clock = tmp_path / "clock.test.yaml"
    clock.write_text(textwrap.dedent(CLOCK_CASES), encoding="utf-8")
    shared = [str(REPO / "examples" / "tests" / "orders.test.yaml"), str(failing), str(clock)]
    code, default = report(*shared)
    assert code == 1
    assert "4 passed, 5 failed" in default
    assert default.count('"task.attempt.failed"') >= 2   # the events diffs show whole runs
    assert "hours of backoff, a sleep and a step timeout PASSED" in default
    started = time.monotonic()
    temporal_code, temporal = report("--temporal", *shared)
    took = time.monotonic() - started
    assert (temporal_code, temporal) == (code, default)
    # days of virtual time (hour-long backoffs, a ten-hour sleep, a one-hour step timeout, the
    # test clock's waits) in seconds: the dev server's start and each retry's round trip
    assert took < 120, took
