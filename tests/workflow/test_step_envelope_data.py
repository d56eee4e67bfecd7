"""``{{ step.data }}`` reads NoETL's step envelope ``data`` on the dev server
(engine/envelope_data.py, docs/semantics.md "NoETL's step envelope"): a guard, a task's
input, text and a ``set`` all see what NoETL's templates see, and what leaves a template
is the plain result (Temporal's payload converter would refuse anything else)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.temporal

PLAYBOOK = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: step_data_on_temporal}
workflow:
  - step: load
    tool: {kind: python, code: "result = {'command_0': {'rows': [{'id': 1}, {'id': 2}]}}"}
    next: {arcs: [{step: own}]}
  - step: own
    tool: {kind: python, code: "result = {'data': {'id': 7}}"}
    set:
      ctx.own_id: "{{ own.data.id }}"
      ctx.rows: "{{ load.data.command_0.rows }}"
    next:
      arcs:
        - step: use
          when: "{{ load.data.command_0.rows | length == 2 }}"
        - step: missed
  - step: use
    tool:
      - name: given
        kind: python
        input: {rows: "{{ load.data.command_0.rows }}", whole: "{{ load.data }}", own: "{{ own.data }}"}
        code: "result = {'ids': [r['id'] for r in rows], 'whole': whole, 'own': own}"
      - name: printed
        kind: shell
        cmd: "echo '{{ load.data.command_0 }}|{{ own.data }}|{{ ctx.own_id }}'"
  - step: missed
    tool: {kind: noop}
"""


async def test_step_data_reads_as_noetl_reads_it(run_yaml):
    report = await run_yaml(PLAYBOOK)
    assert report.state == "COMPLETED", report.error
    assert "missed" not in report.steps
    given = report.steps["use"]["result"]
    assert given["stdout"] == '{"rows": [{"id": 1}, {"id": 2}]}|{"id": 7}|7\n'
    tasks = [e for e in report.events if e["event_type"] == "task.done" and e["entity_id"] == "given"]
    assert tasks and tasks[0]["payload"]["outcome"]["result"] == {
        "ids": [1, 2], "whole": {"command_0": {"rows": [{"id": 1}, {"id": 2}]}}, "own": {"id": 7}}
