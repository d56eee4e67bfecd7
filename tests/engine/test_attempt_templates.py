"""``_attempt`` in task templates is the real attempt number (issue 10 §1): the engine
leaves those strings to the activity, which renders them on every attempt."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.idempotency import ORIGIN, idempotency_key, origin_of_plan
from noetl_temporal.engine.invocation import render_attempt

from .harness import run

TEXT = """
workload: {base: "http://x"}
workflow:
  - step: s
    tool:
      - name: call
        kind: python
        code: "result = {{ _attempt }}"
        args: {n: "{{ _attempt }}", page: "p{{ _attempt + 1 }}", fixed: "{{ workload.base }}"}
        env: {URL: "{{ workload.base }}/page/{{ _attempt }}"}
      - name: inline
        kind: noop
        result: "{{ _attempt }}"
"""


def test_activity_kinds_leave_attempt_templates_unrendered_with_their_context():
    r = run(TEXT)
    cmd = r.ran[0]
    assert cmd.config["args"] == {"n": "{{ _attempt }}", "page": "p{{ _attempt + 1 }}", "fixed": "http://x"}
    assert cmd.config["code"] == "result = {{ _attempt }}"
    assert cmd.config["env"] == {"URL": "{{ workload.base }}/page/{{ _attempt }}"}
    # what the deferred strings read besides _attempt travels as plain values
    assert cmd.secret_context == {"workload": {"base": "http://x"}}
    # an inline task has exactly one attempt
    assert r.state.step_results["s"] == 1


@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_the_activity_renders_them_per_attempt(attempt):
    cmd = run(TEXT).ran[0]
    config = render_attempt(cmd.config, cmd.secret_context, attempt)
    assert config["args"] == {"n": attempt, "page": f"p{attempt + 1}", "fixed": "http://x"}
    assert config["code"] == f"result = {attempt}"
    assert config["env"] == {"URL": f"http://x/page/{attempt}"}


def test_a_string_reading_keychain_and_attempt_is_left_for_the_keychain_step():
    config = {"a": "{{ keychain.k.token }}-{{ _attempt }}", "b": "{{ _attempt }}"}
    assert render_attempt(config, {}, 2) == {"a": "{{ keychain.k.token }}-{{ _attempt }}", "b": 2}


def test_config_without_attempt_templates_is_returned_as_is():
    config = {"a": "plain", "b": "{{ keychain.k.x }}"}
    assert render_attempt(config, {}, 5) is config


KEYED = """
workload: {table: loads}
workflow:
  - step: s
    tool:
      kind: postgres
      command: "INSERT INTO {{ workload.table }} VALUES ('{{ _idempotency_key }}') ON CONFLICT DO NOTHING"
"""


def test_idempotency_key_templates_are_left_for_the_activity_too():
    """``_idempotency_key`` (docs/tools.md) renders in the activity, like ``_attempt``: the
    workflow's command holds the template, never a key, so no history changes."""
    cmd = run(KEYED).ran[0]
    assert cmd.config["command"] == "INSERT INTO {{ workload.table }} VALUES ('{{ _idempotency_key }}') ON CONFLICT DO NOTHING"
    assert cmd.secret_context == {"workload": {"table": "loads"}}
    context = dict(cmd.secret_context, _idempotency_key=idempotency_key(cmd.execution_id, cmd.task_run_id))
    assert render_attempt(cmd.config, context, 2)["command"] == \
        f"INSERT INTO loads VALUES ('{cmd.execution_id}/s:run:1:task:s_task:1') ON CONFLICT DO NOTHING"


def test_the_key_names_the_redrive_chains_origin_when_the_command_carries_one():
    assert idempotency_key("new", "s:run:1:task:t:1") == "new/s:run:1:task:t:1"
    assert idempotency_key("new", "s:run:1:task:t:1", {ORIGIN: "first"}) == "first/s:run:1:task:t:1"
    assert origin_of_plan("old", None) == "old"
    assert origin_of_plan("old", {"from_execution_id": "older"}) == "old"   # a redrive from before the key
    assert origin_of_plan("old", {"key_origin": "first"}) == "first"
