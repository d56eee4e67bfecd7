"""NoETL 5.x templated numbers (``max_in_flight``, a retry's ``attempts``/``delay``/``max_delay``):
rendered once per use, checked after rendering (docs/semantics.md "Templated numbers")."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.numbers import render_number, render_retry_numbers
from noetl_temporal.errors import TemplateError

from .harness import run

LOOP = """
workload: {n: %s}
workflow:
  - step: each
    loop: {in: "{{ [1, 2, 3, 4] }}", iterator: x, spec: {mode: parallel, max_in_flight: "{{ n }}"}}
    tool: {kind: shell, cmd: "echo {{ x }}"}
"""


def test_a_templated_max_in_flight_is_rendered_when_the_loop_starts():
    r = run(LOOP % 2, hold=lambda cmd: True)
    assert len(r.ran) == 2                                   # two in flight, not the default ten
    started = [e for e in r.events if e["event_type"] == "loop.started"][0]
    assert started["payload"]["meta"]["max_in_flight"] == 2


@pytest.mark.parametrize("value, shown", [("'many'", "'many'"), (0, "0"), (5000, "5000"), (2.5, "2.5")])
def test_a_max_in_flight_that_renders_no_valid_number_fails_the_step_located(value, shown):
    r = run(LOOP % value)
    assert r.status == "FAILED"
    failed = [e for e in r.events if e["event_type"] == "step.failed"][0]
    message = failed["payload"]["outcome"]["error"]["message"]
    assert message.startswith(f"each.loop.spec.max_in_flight: rendered to {shown}, which is not a whole number >= 1 "
                              "and <= 1000")
    assert r.ran == []


RETRY = """
workload: {tries: %s, pause: 0.5}
workflow:
  - step: s
    tool:
      kind: shell
      cmd: "exit 1"
      spec:
        policy:
          rules:
            - when: "{{ output.status == 'error' }}"
              then: {do: retry, attempts: "{{ tries }}", delay: "{{ pause * 2 }}", max_delay: "{{ '3' }}"}
"""


def test_templated_retry_numbers_are_rendered_once_when_the_task_is_scheduled():
    r = run(RETRY % 4, hold=lambda cmd: True)
    cmd = r.ran[0]
    assert cmd.rules[0]["then"]["attempts"] == 4
    assert cmd.rules[0]["then"]["delay"] == 1.0
    assert cmd.rules[0]["then"]["max_delay"] == 3.0
    assert cmd.max_attempts == 4                             # Temporal's retry policy sees the number


def test_a_retry_number_that_renders_no_number_fails_the_task_with_a_located_error():
    r = run(RETRY % "'lots'")
    assert r.status == "FAILED"
    assert r.ran == []                                        # never scheduled
    failed = [e for e in r.events if e["event_type"] == "task.failed"][0]
    error = failed["payload"]["outcome"]["error"]
    assert error["kind"] == "template"
    assert error["message"].startswith("s.tool.s_task.spec.policy.rules[0].then.attempts: rendered to 'lots', "
                                       "which is not a whole number >= 1")


@pytest.mark.parametrize("rendered, whole, expected", [("3", True, 3), (3.0, True, 3), ("0.5", False, 0.5),
                                                        (True, True, None), ("nan", False, None), (None, False, None)])
def test_render_number_reads_numbers_and_numeric_text_only(rendered, whole, expected):
    context = {"v": rendered}
    if expected is None:
        with pytest.raises(Exception, match="rendered to"):
            render_number("{{ v }}", context, "w", whole=whole, minimum=0)
    else:
        assert render_number("{{ v }}", context, "w", whole=whole, minimum=0) == expected
    assert render_number(7, context, "w", whole=True, minimum=0) == 7   # a literal is left as validated


@pytest.mark.parametrize("template, shown", [("{{ 10**400 }}", "10000000000"), ("{{ 'x' * 5000 }}", "'xxxxxxxx"),
                                             ("{{ '1e400' }}", "'1e400'")])
def test_a_hostile_value_is_a_short_located_error_not_a_crash(template, shown):
    with pytest.raises(TemplateError) as caught:
        render_number(template, {}, "s.loop.spec.max_in_flight", whole=True, minimum=1, maximum=1000)
    message = str(caught.value)
    assert message.startswith(f"s.loop.spec.max_in_flight: rendered to {shown}") and len(message) < 400


@pytest.mark.parametrize("key, value", [("attempts", "{{ 2**40 }}"), ("delay", "{{ 1e30 }}"),
                                        ("max_delay", "{{ 10**12 }}")])
def test_rendered_retry_numbers_stay_inside_what_temporal_takes(key, value):
    rules = [{"when": None, "then": {"do": "retry", key: value}}]
    with pytest.raises(TemplateError, match=f"then.{key}: rendered to .* and <= "):
        render_retry_numbers(rules, {}, "s.tool.t.spec.policy")
