"""``task-side-renders`` (docs/durability.md, "Task-side renders"): the engine leaves a tool
task's templates that use a task-only filter unrendered, with the names they read as plain
values, for the activity's render child; older executions render them as before."""

from __future__ import annotations

from noetl_temporal.engine import behaviours
from noetl_temporal.engine.invocation import render_attempt
from noetl_temporal.engine.task_plans import uses_task_only

from .harness import run

TEXT = """
workload: {text: "see http://example.com", words: "one two three"}
workflow:
  - step: s
    tool:
      - name: call
        kind: shell
        cmd: "echo {{ workload.text | urlize }}"
        env: {PLAIN: "{{ workload.words | upper }}", WRAPPED: "{{ workload.words | map('wordwrap') | list }}"}
"""


def test_task_only_templates_wait_for_the_activity_with_the_names_they_read():
    cmd = run(TEXT).ran[0]
    assert cmd.config["cmd"] == "echo {{ workload.text | urlize }}"
    assert cmd.config["env"] == {"PLAIN": "ONE TWO THREE",   # workflow-side ops still render here
                                 "WRAPPED": "{{ workload.words | map('wordwrap') | list }}"}
    assert cmd.secret_context == {"workload": {"text": "see http://example.com", "words": "one two three"}}


def test_an_execution_without_the_behaviour_renders_them_in_the_workflow_as_before():
    before = [b for b in behaviours.CURRENT if b != behaviours.TASK_SIDE_RENDERS]
    cmd = run(TEXT, behaviours=before).ran[0]
    assert cmd.config["cmd"].startswith('echo see <a href="http://example.com"')
    assert cmd.secret_context == {}


def test_the_attempt_step_leaves_a_task_only_template_to_the_render_child():
    config = {"a": "{{ _attempt | string | wordwrap(3) }}", "b": "{{ _attempt }}"}
    assert render_attempt(config, {}, 2) == {"a": "{{ _attempt | string | wordwrap(3) }}", "b": 2}


def test_which_templates_use_a_task_only_operation():
    assert uses_task_only("{{ x | urlize }}")
    assert uses_task_only("{{ xs | map('striptags') | list }}")
    assert not uses_task_only("{{ x | upper }}")
    assert not uses_task_only("urlize")                 # not a template
    assert not uses_task_only("{{ urlize }}")          # a name, not the filter


def test_the_gated_filters_are_the_task_only_ones():
    """``templates.GATED_FILTERS`` (what the activity renders in the worker's process only for
    small inputs) is ``dsl/template_ops.py``'s task-only filters: the helper cannot import the DSL."""
    from noetl_temporal.dsl.template_ops import OPERATIONS, TASK
    from noetl_temporal.templates import GATED_FILTERS

    assert GATED_FILTERS == {name for (kind, name), op in OPERATIONS.items() if op.allowed == TASK and kind == "filter"}
    assert not [name for (kind, name), op in OPERATIONS.items() if op.allowed == TASK and kind == "test"]
