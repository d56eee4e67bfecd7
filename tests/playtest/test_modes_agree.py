"""``noetl-temporal test`` and ``noetl-temporal test --temporal`` agree: the same report,
case for case and failure for failure (every event type of a run appears in an events
diff), on a shared set of passing and failing cases (docs/testing-playbooks.md), hours of
step timeout, sleep and backoff included. The scale tier (about 15 s); the default run has
the clock's cases (test_test_clock.py)."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

from .test_test_clock import clock_files, report

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


def test_both_modes_print_the_same_report(tmp_path: Path) -> None:
    failing = tmp_path / "failing.test.yaml"
    failing.write_text(textwrap.dedent(FAILING).format(playbook=REPO / "examples" / "orders.yaml"), encoding="utf-8")
    clock = clock_files(tmp_path)
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
