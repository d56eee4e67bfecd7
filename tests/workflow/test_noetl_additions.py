"""NoETL 5.x additions on the dev server: a task policy's ``on_unmatched`` and a router's
``next.spec.on_no_match`` (docs/semantics.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from noetl_temporal.cli.locations import locate_message
from noetl_temporal.dsl import load_playbook_text

pytestmark = pytest.mark.temporal

PIPE = """
workflow:
  - step: s
    tool:
      - name: a
        kind: python
        code: "raise ValueError('a failed')"
        spec: {policy: %s}
      - {name: b, kind: python, code: "result = 'b ran'"}
"""


async def test_on_unmatched_fail_fails_the_task_no_rule_accepts(run_yaml):
    report = await run_yaml(PIPE % '{rules: [{when: "{{ output.error.kind == \'timeout\' }}", then: {do: retry}}], '
                                   'on_unmatched: fail}')
    assert report.state == "FAILED"
    assert "ValueError: a failed" in report.summary["failed_steps"][0]["message"]
    started = [e["entity_id"] for e in report.events if e["event_type"] == "task.started"]
    assert started == ["a"]
    attempts = [e for e in report.events if e["event_type"] == "task.attempt.failed"]
    assert len(attempts) == 1                 # the retry rule did not match: one attempt


async def test_on_unmatched_continue_goes_on_after_an_error(run_yaml):
    report = await run_yaml(PIPE % "{on_unmatched: continue}")
    assert report.state == "COMPLETED", report.error
    assert report.steps["s"]["result"] == "b ran"


async def test_without_on_unmatched_rules_that_do_not_match_continue(run_yaml):
    # the seed's rule, unchanged: the default is what it was
    report = await run_yaml(PIPE % '{rules: [{when: "{{ false }}", then: {do: fail}}]}')
    assert report.state == "COMPLETED", report.error
    assert report.steps["s"]["result"] == "b ran"


ROUTER = """
executor: {spec: {no_next_is_error: %s}}
workflow:
  - step: a
    tool: {kind: noop}
    next:
      spec: {mode: exclusive%s}
      arcs: [{step: b, when: "{{ false }}"}]
  - step: b
    tool: {kind: noop}
"""


@pytest.mark.parametrize("no_next_is_error, on_no_match, state", [
    ("false", None, "COMPLETED"),             # no match: the branch ends, the run completes
    ("false", "complete", "COMPLETED"),       # the same, said explicitly (NoETL's default)
    ("true", None, "FAILED"),                 # no_next_is_error: a no-match is a failure ...
    ("true", "quiet", "COMPLETED"),           # ... except where the router says `quiet`
    ("false", "error", "FAILED"),             # this router's no-match is a failure
])
async def test_on_no_match(run_yaml, no_next_is_error, on_no_match, state):
    report = await run_yaml(ROUTER % (no_next_is_error, f", on_no_match: {on_no_match}" if on_no_match else ""))
    assert report.state == state, report.error
    assert "b" not in [e["entity_id"] for e in report.events if e["event_type"] == "step.started"]
    if state == "FAILED":
        message = report.summary["failed_steps"][0]["message"]
        assert "no arc of next matched" in message
        # the message names the setting that made it a failure, not the other one
        assert ("on_no_match: error" in message) == (on_no_match == "error")
        assert ("no_next_is_error" in message) == (on_no_match != "error")


STEP_TIMEOUT = """
workflow:
  - step: slow
    spec: {timeout: 1}
    tool:
      - {name: first, kind: shell, cmd: "sleep 0.6"}
      - {name: second, kind: shell, cmd: "sleep 90"}
    next:
      arcs:
        - {step: on_timeout, when: "{{ event.error.kind == 'timeout' }}"}
  - step: on_timeout
    tool: {kind: noop, result: handled}
"""


async def test_step_spec_timeout_bounds_the_whole_step_run(run_yaml):
    # each task alone is under a second's attempt timeout only for the first one: the bound
    # is the step's, across its tasks, and the failure routes like any other
    t0 = time.monotonic()
    report = await run_yaml(STEP_TIMEOUT)
    assert time.monotonic() - t0 < 45   # not the 90 s task (docs/testing.md)
    assert report.state == "COMPLETED", report.error
    failed = [e for e in report.events if e["event_type"] == "step.failed"][0]
    error = failed["payload"]["outcome"]["error"]
    assert error["kind"] == "timeout"
    assert "ran longer than its spec.timeout of 1 s" in error["message"]
    assert report.steps["on_timeout"]["result"] == "handled"
    loaded = load_playbook_text(textwrap.dedent(STEP_TIMEOUT), source="pb.yaml")
    assert locate_message(loaded, error["message"]).startswith("pb.yaml:4:12: slow.spec.timeout: ")


async def test_step_spec_timeout_unrouted_fails_the_run(run_yaml):
    report = await run_yaml(STEP_TIMEOUT.split("    next:")[0])
    assert report.state == "FAILED"
    assert report.summary["failed_steps"][0]["kind"] == "timeout"


TEMPLATED_NUMBERS = """
workload: {width: 2, tries: 3, pause: 0.1}
workflow:
  - step: each
    loop: {in: "{{ [1, 2, 3, 4] }}", iterator: x, spec: {mode: parallel, max_in_flight: "{{ width }}"}}
    tool:
      kind: python
      code: "result = {'x': x, 'attempt': _attempt}"
      input: {x: "{{ x }}", _attempt: "{{ _attempt }}"}
    next: {arcs: [{step: flaky}]}
  - step: flaky
    tool:
      kind: python
      code: |
        if attempt < 3:
            raise ValueError('not yet')
        result = attempt
      input: {attempt: "{{ _attempt }}"}
      spec:
        policy:
          rules:
            - when: "{{ output.status == 'error' }}"
              then: {do: retry, attempts: "{{ tries }}", delay: "{{ pause }}"}
"""


async def test_templated_numbers_are_rendered_and_used(run_yaml):
    report = await run_yaml(TEMPLATED_NUMBERS)
    assert report.state == "COMPLETED", report.error
    started = [e for e in report.events if e["event_type"] == "loop.started"][0]
    assert started["payload"]["meta"]["max_in_flight"] == 2
    assert report.steps["flaky"]["result"] == 3               # three attempts: `tries` rendered to 3


async def test_a_templated_number_that_renders_no_number_fails_located(run_yaml):
    report = await run_yaml(TEMPLATED_NUMBERS, payload={"tries": "often"})
    assert report.state == "FAILED"
    message = report.summary["failed_steps"][0]["message"]
    assert "flaky.tool.flaky_task.spec.policy.rules[0].then.attempts: rendered to 'often'" in message
    loaded = load_playbook_text(textwrap.dedent(TEMPLATED_NUMBERS), source="pb.yaml")
    where = message[message.index("flaky.tool"):]
    assert locate_message(loaded, where).startswith("pb.yaml:23:33: ")  # the `attempts:` key


OUTPUT = """
workflow:
  - step: s
    tool:
      - name: a
        kind: python
        code: "result = {'data': {'next': 7, 'rows': ['x', 'y']}, 'note': 'é' * 40}"
        output:
          select: [{path: "$.data.next", as: next_page}, {path: "$.data.rows[1]", as: second}]
          as: page
          scope: execution
          store: {kind: %s}
          %s
      - name: b
        kind: noop
        result: "{{ {'next': next_page, 'second': second, 'stored': page.kind == 'result_ref',
                    'preview': page.preview | default(none), 'extracted': page.extracted | default(none)} }}"
"""


async def test_output_select_and_as_bind_names_from_an_inline_result(run_yaml):
    report = await run_yaml(OUTPUT % ("auto", ""))
    assert report.state == "COMPLETED", report.error
    result = report.steps["s"]["result"]
    assert (result["next"], result["second"], result["stored"]) == (7, "y", False)
    assert not [e for e in report.events if e["event_type"] == "result.stored"]


@pytest.mark.parametrize("store", ["disk", "auto"])
async def test_output_stores_by_reference_with_extracted_values_and_a_byte_preview(run_yaml, store):
    report = await run_yaml(OUTPUT % (store, "inline_max_bytes: 0\n          preview_max_bytes: 21"))
    assert report.state == "COMPLETED", report.error
    result = report.steps["s"]["result"]
    assert (result["next"], result["second"], result["stored"]) == (7, "y", True)
    assert result["extracted"] == {"next_page": 7, "second": "y"}
    assert result["preview"] == '{"data":{"next":7,"ro'            # the JSON's first 21 bytes
    stored = [e for e in report.events if e["event_type"] == "result.stored"]
    assert stored[0]["payload"]["result_ref"]["store"] == "fs"


FINALLY_INSTEAD = """
workflow:
  - step: s
    tool:
      - name: work
        kind: python
        code: "%s"
        spec:
          policy:
            rules:
              - when: "{{ output.status == 'error' }}"
                then: {do: jump, to: cleanup}
      - {name: more, kind: noop, result: more ran}
      - {name: cleanup, kind: noop, result: "cleaned after {{ _prev }}"}
"""


@pytest.mark.parametrize("code, last", [("result = 'ok'", "cleaned after more ran"),
                                        ("raise ValueError('x')", "cleaned after null")])  # None prints as NoETL prints it
async def test_the_form_ntl409_gives_for_finally_runs_the_clean_up_on_both_outcomes(run_yaml, code, last):
    report = await run_yaml(FINALLY_INSTEAD % code)
    assert report.state == "COMPLETED", report.error
    assert report.steps["s"]["result"] == last


REQUIRES = """
apiVersion: noetl.io/v2
kind: Playbook
executor:
  requires:
    tools: [python]
    features: [result_storage%s]
workflow:
  - step: s
    tool: {kind: python, code: "result = 'ran'"}
"""


async def test_a_playbook_whose_requirements_the_worker_meets_runs(run_yaml):
    report = await run_yaml(REQUIRES % "")
    assert report.state == "COMPLETED", report.error
    assert report.steps["s"]["result"] == "ran"


def test_run_refuses_a_playbook_requiring_what_the_worker_lacks_naming_it(tmp_path):
    path = tmp_path / "needs.yaml"
    path.write_text(textwrap.dedent(REQUIRES % "").replace("tools: [python]", "tools: [python, pyhton]"))
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert f"{path}:6:" in proc.stderr and "NTL106" in proc.stderr
    assert "requires tool 'pyhton', which this worker does not run (did you mean 'python'?)" in proc.stderr


def test_run_warns_of_a_feature_no_worker_provides_and_runs_the_playbook_as_noetl_does(tmp_path):
    """NoETL never checks ``executor.requires.features`` (noetl/core/dsl/engine/parser/validation.py,
    ``_validate_executor``: only that it is a list), so its quantum_cudaq fixture, which names
    ``ai_meta``, runs there: here it runs too, with the warning NTL340 located."""
    path = tmp_path / "needs.yaml"
    path.write_text(textwrap.dedent(REQUIRES % ", ai_meta"))
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"{path}:7:" in proc.stderr and "NTL340" in proc.stderr
    assert "requires feature 'ai_meta', which no noetl-temporal worker provides" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["state"] == "COMPLETED" and report["steps"]["s"]["result"] == "ran"
