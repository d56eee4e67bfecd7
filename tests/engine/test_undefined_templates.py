"""A task template that renders an undefined value: a warning in the task's events, or
with ``strict_templates`` a located template error. ``default()`` and ``is defined`` stay quiet."""

from __future__ import annotations

import pytest

from noetl_temporal.templates import render
from noetl_temporal.templates import undefined as template_undefined

from .harness import ok, run

TEXT = """
executor: {{spec: {{strict_templates: {strict}}}}}
workflow:
  - step: compute
    tool: {{kind: python, code: x}}
    next: {{arcs: [{{step: report}}]}}
  - step: report
    tool:
      kind: noop
      result: "total={{{{ compute.totl }}}} ok={{{{ compute.total | default(0) }}}}"
"""


def _warnings(r):
    return [w for e in r.events if e["event_type"] == "task.started"
            for w in (e.get("payload") or {}).get("warnings") or []]


def test_an_undefined_value_is_a_warning_in_the_tasks_started_event():
    r = run(TEXT.format(strict="false"), lambda cmd: ok({"total": 3}))
    assert r.status == "COMPLETED"
    assert r.state.step_results["report"] == "total= ok=3"   # NoETL's rendering, unchanged
    assert _warnings(r) == [{
        "kind": "undefined", "name": "totl", "where": "report.tool.report_task.result",
        "template": "total={{ compute.totl }} ok={{ compute.total | default(0) }}",
        "message": "report.tool.report_task.result: undefined value 'totl' rendered as empty in template "
                   "'total={{ compute.totl }} ok={{ compute.total | default(0) }}'"}]


def test_strict_templates_make_it_a_located_task_error():
    r = run(TEXT.format(strict="true"), lambda cmd: ok({"total": 3}))
    assert r.status == "FAILED"
    [failed] = [e for e in r.events if e["event_type"] == "task.failed"]
    error = failed["payload"]["outcome"]["error"]
    assert error["kind"] == "template"
    assert error["message"].startswith("report.tool.report_task.result: undefined value: 'totl' is undefined "
                                       "(strict templates)")


@pytest.mark.parametrize("template", [
    "{{ x | default('d') }}", "{{ 1 if x is defined else 2 }}", "{{ x is undefined }}",
    "{{ y if y else 'n' }}", "{% if x %}a{% endif %}", "{{ c.get('missing') }}",
])
def test_guarded_reads_of_missing_names_are_not_noticed(template):
    with template_undefined.recording(strict=True) as found:
        render(template, {"c": {}}, where="s")
    assert found == []


def test_nothing_is_recorded_outside_a_recording():
    assert render("{{ missing }}", {}) is None
    with template_undefined.recording() as found:
        pass
    assert found == []


def test_a_tasks_set_patch_warns_in_its_done_event():
    text = """
workflow:
  - step: s
    tool:
      kind: noop
      result: {total: 1}
      set: {ctx.total: "{{ output.data.totl }}", ctx.ok: "{{ output.data.total }}"}
"""
    r = run(text)
    assert r.status == "COMPLETED" and r.state.ctx == {"total": None, "ok": 1}
    [done] = [e for e in r.events if e["event_type"] == "task.done"]
    assert [w["message"] for w in done["payload"]["warnings"]] == [
        "s.tool.s_task.set.total: undefined value 'totl' rendered as empty in template "
        "'{{ output.data.totl }}'"]


def test_a_long_template_is_cut_in_the_warning():
    with template_undefined.recording() as found:
        render("x" * 300 + "{{ missing }}", {}, where="s")
    assert found[0].to_dict()["template"] == "x" * 200 + "..."


def test_an_undefined_value_inside_a_list_or_dict_becomes_none():
    """Left as an Undefined, it could not be encoded for Temporal: the workflow task failed
    again and again and the execution hung until its timeout."""
    import json

    value = render("{{ {'a': nosuch.field, 'b': [1, other], 'c': ({'d': 2},)} }}", {}, where="t")
    assert value == {"a": None, "b": [1, None], "c": [{"d": 2}]}
    json.dumps(value)
    same = {"x": [1, 2]}
    assert render("{{ v }}", {"v": same}, where="t") is same   # nothing undefined: not copied
