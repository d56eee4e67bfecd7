"""NoETL 5.x additions on the dev server: a task policy's ``on_unmatched`` and a router's
``next.spec.on_no_match`` (docs/semantics.md)."""

from __future__ import annotations

import pytest

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
        assert "no arc of next matched" in report.summary["failed_steps"][0]["message"]
