"""``noetl-temporal test`` and ``noetl-temporal test --temporal`` agree: the same report,
case for case and failure for failure (every event type of a run appears in an events
diff), on a shared set of passing and failing cases (docs/testing-playbooks.md)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
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


def report(*args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "test", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    # timings differ (and so the summary line's padding), nothing else may
    return proc.returncode, re.sub(r"=+", "=", re.sub(r"\(\d+ ms\)| in \d+\.\d+s ", "", proc.stdout))


def test_both_modes_print_the_same_report(tmp_path: Path) -> None:
    failing = tmp_path / "failing.test.yaml"
    failing.write_text(textwrap.dedent(FAILING).format(playbook=REPO / "examples" / "orders.yaml"), encoding="utf-8")
    shared = [str(REPO / "examples" / "tests" / "orders.test.yaml"), str(failing)]
    code, default = report(*shared)
    assert code == 1
    assert "3 passed, 4 failed" in default
    assert default.count('"task.attempt.failed"') >= 2   # the events diffs show whole runs
    temporal_code, temporal = report("--temporal", *shared)
    assert (temporal_code, temporal) == (code, default)
