"""``noetl-temporal test`` through the command line, as a user runs it (docs/testing-playbooks.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tests" / "orders.test.yaml"


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "test", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_the_example_passes_and_writes_junit(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    proc = cli("examples", "--junit-xml", str(junit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "orders.test.yaml::a small order is charged after the API recovers PASSED" in proc.stdout
    assert "3 passed" in proc.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "0"


PLAYBOOK = """\
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: slow, path: tests/slow}
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
                      then: {do: retry, attempts: 3, delay: 10800}
        next: {arcs: [{step: nap}]}
      - step: nap
        tool: {kind: shell, cmd: sleep 36000}
        next: {arcs: [{step: guarded}]}
      - step: guarded
        spec: {timeout: 60}
        tool: {kind: shell, cmd: sleep 120}
        next:
          arcs:
            - {step: late, when: "{{ event.name == 'step.failed' }}"}
      - step: late
        tool: {kind: noop, result: done}
    """


def test_hours_of_backoff_and_sleep_take_no_real_time(tmp_path: Path) -> None:
    write(tmp_path / "slow.yaml", PLAYBOOK)
    write(tmp_path / "slow.test.yaml", """\
        playbook: slow.yaml
        cases:
          - name: three-hour backoffs, a ten-hour sleep
            mocks:
              call.get: [{error: boom}, {error: boom}, {result: {ok: true}}]
              nap: {delay: 10h}
              guarded: {delay: 2m}
            expect:
              attempts: {call.get: 3}
              route: [call, nap, guarded, late]     # guarded ran past its 60 s timeout
              status: COMPLETED
              events: [task.attempt.failed, task.attempt.failed, task.done, step.failed, playbook.finished]
        """)
    started = time.monotonic()
    proc = cli(str(tmp_path / "slow.test.yaml"))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    # the case itself (the CLI's start-up aside) takes milliseconds of 16 virtual hours
    line = next(ln for ln in proc.stdout.splitlines() if "three-hour backoffs" in ln)
    assert int(line.rsplit("(", 1)[1].split()[0]) < 1000, line
    assert time.monotonic() - started < 60
    assert proc.returncode == 0, proc.stdout


def test_failed_expectations_are_located_with_a_diff(tmp_path: Path) -> None:
    test = write(tmp_path / "wrong.test.yaml", f"""\
        playbook: {REPO / 'examples' / 'orders.yaml'}
        cases:
          - name: wrong
            mocks:
              fetch.get: {{result: {{amount: 40}}}}
              settle: {{delay: 2h}}
              charge: {{result: {{charged: 41}}}}
            expect:
              status: COMPLETED
              ctx: {{charged: 40}}
              steps: {{review: 1}}
          - name: right
            mocks:
              fetch.get: {{result: {{amount: 500}}}}
            expect: {{route: [start, fetch, review, done]}}
          - name: unmocked
            expect: {{status: COMPLETED}}
        """)
    proc = cli(str(test))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "wrong.test.yaml::wrong FAILED" in out and "wrong.test.yaml::right PASSED" in out
    assert f"{test}:10:22: expect.ctx.charged: ctx 'charged' differs" in out
    assert "    -40\n    +41" in out
    assert f"{test}:11:23: expect.steps.review: expected step 'review' to run 1 time(s), it ran 0" in out
    assert "task 'fetch.get' (kind http) has no mock" in out
    assert "1 passed, 2 failed" in out
    assert "Traceback" not in out + proc.stderr


@pytest.mark.parametrize(("text", "expected"), [
    ("cases: []\n", ["1:1: names no playbook", "1:8: cases: has no cases"]),
    ("playbook: missing.yaml\ncases: [{{name: a, expect: {{}}}}]\n", ["1:11: playbook: no playbook file 'missing.yaml'"]),
    ("playbook: {pb}\ncases:\n  - name: a\n    mocks: {{fetch: {{reslt: 1}}}}\n    expect: {{status: DONE}}\n",
     ["4:21: cases[0].mocks.fetch.reslt: unknown key 'reslt' (did you mean 'result'?)",
      "5:22: cases[0].expect.status: not a final status: 'DONE'"]),
    ("playbook: {pb}\ncases:\n  - name: a\n    mocks: {{fetch.gett: {{result: 1}}}}\n    expect: {{}}\n",
     ["4:13: mock 'fetch.gett': step 'fetch' has no task 'gett' (did you mean 'get'?)"]),
    ("playbook: {pb}\ncases:\n  - name: a\n    mocks: {{fetch: {{delay: forever}}}}\n    expect: {{}}\n",
     ["4:28: cases[0].mocks.fetch.delay: not a duration: 'forever'"]),
    ("playbook: [\n", ["2:1: YAML syntax error"]),
])
def test_invalid_test_files_are_located(tmp_path: Path, text: str, expected: list[str]) -> None:
    test = write(tmp_path / "bad.test.yaml", text.format(pb=REPO / "examples" / "orders.yaml"))
    proc = cli(str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for item in expected:
        assert f"{test}:{item}" in proc.stdout, proc.stdout
    assert "NTL" not in proc.stdout and "Traceback" not in proc.stdout + proc.stderr


def test_no_test_file_and_a_missing_path_are_usage_errors(tmp_path: Path) -> None:
    proc = cli(str(tmp_path))
    assert proc.returncode == 2 and "no test files" in proc.stderr
    proc = cli(str(tmp_path / "nope"))
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr


def test_an_invalid_playbook_is_reported_with_its_own_diagnostics(tmp_path: Path) -> None:
    write(tmp_path / "broken.yaml", """\
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: broken, path: tests/broken}
        workflow:
          - step: a
            tool: {kind: nope}
        """)
    test = write(tmp_path / "broken.test.yaml", "playbook: broken.yaml\ncases: [{name: a, expect: {}}]\n")
    proc = cli(str(test))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{test}:1: playbook: {tmp_path / 'broken.yaml'} is not a valid playbook" in proc.stdout
    assert f"{tmp_path / 'broken.yaml'}:6:18: NTL302 unknown tool kind 'nope'" in proc.stdout


def test_record_writes_a_case_that_replays_the_run(tmp_path: Path) -> None:
    out = tmp_path / "hello.test.yaml"
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "test", "--record", "examples/hello.yaml",
                           "--to", str(out), "--set", "name=you", "--name", "greets you"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the run ended COMPLETED (greet -> shout -> visit -> report)" in proc.stdout
    text = out.read_text(encoding="utf-8")
    assert "greet.greet_task:" in text and "Hello, you!" in text and "&id" not in text
    replay = cli(str(out))   # the tools are mocks now: no python or shell runs
    assert replay.returncode == 0, replay.stdout
    assert "hello.test.yaml::greets you PASSED" in replay.stdout
    again = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "test", "--record", "examples/hello.yaml",
                            "--to", str(out)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert again.returncode == 2 and "exists" in again.stderr
