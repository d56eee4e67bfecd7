"""``{{ step.data }}`` reads NoETL's step envelope ``data`` (engine/envelope_data.py,
docs/semantics.md "NoETL's step envelope"): a mapping result's own ``data`` key when it has
one, else the result itself, and so below it for every mapping (NoETL's ``TaskResultProxy``).
Executions started before the behaviour ``step-envelope-data`` read it as undefined."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.behaviours import CURRENT, STEP_ENVELOPE_DATA
from noetl_temporal.engine.envelope_data import EnvelopeLayer, EnvelopeView
from noetl_temporal.engine.messages import RunTask
from noetl_temporal.templates import render, render_value

from .harness import ok, run

RESULTS = {"load": {"command_0": {"rows": [{"id": 1, "data": "x"}], "row_count": 1}, "n": 3},
           "own": {"data": 1}, "none_data": {"data": None}, "rows": [1, 2], "scalar": 7,
           "nested": {"a": {"b": 2}, "c": {"data": "mine"}}}
SCOPE = EnvelopeLayer(RESULTS)


@pytest.mark.parametrize("template,value", [
    ("{{ load.data.command_0.rows }}", [{"id": 1, "data": "x"}]),   # NoETL's postgres fixture read
    ("{{ load.data.n }}", 3),
    ("{{ load.data.data.n }}", 3),                  # the alias of the alias: the result again
    ("{{ load.data == load }}", True),
    ("{{ own.data }}", 1),                          # its own `data` key wins, as in NoETL
    ("{{ own['data'] }}", 1),
    ("{{ none_data.data }}", None),                 # an own key that is null is still its own
    ("{{ nested.a.data.b }}", 2),                   # every mapping below is proxied too
    ("{{ nested.c.data }}", "mine"),
    ("{{ load.data.command_0.rows[0].data }}", "x"),
    ("{{ 'data' in load }}", False),                # membership and .get are the dict's own
    ("{{ load.get('data') }}", None),
    ("{{ load | length }}", 2),
])
def test_data_reads_as_noetl_reads_it(template, value):
    assert render(template, SCOPE) == value


@pytest.mark.parametrize("template", ["{{ rows.data }}", "{{ scalar.data }}",
                                      "{{ load.data.command_0.rows[0].nope }}"])
def test_what_noetl_does_not_proxy_stays_undefined(template):
    # a list result and a scalar have no envelope `data` in NoETL either; nor a list's items
    assert render(template, SCOPE) is None


def test_a_render_returns_and_prints_the_plain_result():
    value = render("{{ load.data }}", SCOPE)
    assert type(value) is dict and value == RESULTS["load"]
    assert type(render("{{ nested.a }}", SCOPE)) is dict
    built = render_value({"x": "{{ [load.data, {'k': own}] }}"}, SCOPE)
    assert built == {"x": [RESULTS["load"], {"k": {"data": 1}}]}
    assert type(built["x"][0]) is dict and type(built["x"][1]["k"]) is dict
    assert render("n={{ own.data }} {{ nested.a.data }}", SCOPE) == 'n=1 {"b": 2}'
    assert render("{{ load.data | tojson }}", SCOPE).startswith('{"command_0"')


def test_the_view_is_a_mapping_equal_to_its_result():
    view = EnvelopeView({"a": 1})
    assert view == {"a": 1} and dict(view) == {"a": 1} and list(view) == ["a"]
    assert view["data"] is view and "data" not in view and view.get("data", 0) == 0


PLAYBOOK = """
workflow:
  - step: load
    tool: {kind: python, code: "result = {'n': 3}"}
    next: {arcs: [{step: own}]}
  - step: own
    tool: {kind: python, code: "result = {'data': 1}"}
    next:
      arcs:
        - step: enveloped
          when: "{{ load.data.n == 3 and own.data == 1 }}"
        - step: bare
  - step: enveloped
    tool: {kind: python, code: "result = x", input: {x: "{{ load.data }}", y: "{{ own.data }}"}}
  - step: bare
    tool: {kind: python, code: "result = x", input: {x: "{{ load.data }}", y: "{{ own.data }}"}}
"""


def _tool(cmd: RunTask) -> dict:
    return ok({"load": {"n": 3}, "own": {"data": 1}}.get(cmd.step, cmd.config.get("input")))


def test_a_run_routes_and_passes_the_envelope_data():
    assert STEP_ENVELOPE_DATA in CURRENT
    r = run(PLAYBOOK, _tool)
    assert r.status == "COMPLETED" and r.steps_started() == ["load", "own", "enveloped"]
    (last,) = [c for c in r.ran if c.step == "enveloped"]
    assert last.config["input"] == {"x": {"n": 3}, "y": 1}
    assert type(last.config["input"]["x"]) is dict


def test_an_execution_started_before_the_behaviour_reads_it_undefined():
    r = run(PLAYBOOK, _tool, behaviours=[b for b in CURRENT if b != STEP_ENVELOPE_DATA])
    assert r.status == "COMPLETED" and r.steps_started() == ["load", "own", "bare"]
    (last,) = [c for c in r.ran if c.step == "bare"]
    assert last.config["input"] == {"x": None, "y": 1}


TASK_LIST = """
workflow:
  - step: fetch_page
    tool:
      - {name: fetch, kind: python, code: "result = {'page': 1}"}
      - {name: check, kind: python, code: "result = {'has_more': True}"}
    next:
      arcs:
        - step: more
          when: "{{ fetch_page.results.check.has_more and fetch_page.results.fetch.data.page == 1 }}"
        - step: done
  - step: more
    tool: {kind: python, code: "result = x", input: {x: "{{ fetch_page.results }}", last: "{{ fetch_page }}"}}
  - step: done
    tool: {kind: noop}
"""


def _tasks(cmd: RunTask) -> dict:
    return ok({"fetch": {"page": 1}, "check": {"has_more": True}}.get(cmd.task, cmd.config.get("input")))


def test_a_task_list_step_reads_its_tasks_results_by_name_as_noetl_s_task_sequence():
    r = run(TASK_LIST, _tasks)
    assert r.status == "COMPLETED" and r.steps_started() == ["fetch_page", "more"]
    (last,) = [c for c in r.ran if c.step == "more"]
    assert last.config["input"] == {"x": {"fetch": {"page": 1}, "check": {"has_more": True}},
                                    "last": {"has_more": True}}   # the step's result stays its last task's
    assert r.state.task_results == {"fetch_page": {"fetch": {"page": 1}, "check": {"has_more": True}}}
    assert r.state.step_results["fetch_page"] == {"has_more": True}


def test_task_results_are_kept_only_where_a_template_reads_them():
    r = run(TASK_LIST.replace("fetch_page.results.check.has_more and fetch_page.results.fetch.data.page == 1",
                              "fetch_page.has_more").replace("x: \"{{ fetch_page.results }}\", ", ""), _tasks)
    assert r.steps_started() == ["fetch_page", "more"] and r.state.task_results == {}


def test_a_result_s_own_results_key_wins():
    view = EnvelopeView({"results": [1]}, {"fetch": {"a": 1}})
    assert view["results"] == [1] and EnvelopeView({"x": 1}, {"fetch": {"a": 1}})["results"] == {"fetch": {"a": 1}}


def test_before_the_behaviour_a_task_list_has_no_results():
    r = run(TASK_LIST, _tasks, behaviours=[b for b in CURRENT if b != STEP_ENVELOPE_DATA])
    assert r.steps_started() == ["fetch_page", "done"] and r.state.task_results == {}


def test_kept_task_results_cross_continue_as_new_and_an_empty_snapshot_is_unchanged():
    from noetl_temporal.engine import snapshot

    r = run(TASK_LIST, _tasks)
    data = snapshot.snapshot(r.state)
    assert snapshot.restore(r.state.playbook, data).task_results == r.state.task_results
    bare = run(TASK_LIST.replace(".results.check.has_more and fetch_page.results.fetch.data.page == 1",
                                 ".has_more").replace("x: \"{{ fetch_page.results }}\", ", ""), _tasks)
    assert "task_results" not in snapshot.snapshot(bare.state)["fields"]   # as snapshots were before
