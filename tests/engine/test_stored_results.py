"""A stored result read through the fields it kept (engine/stored_results.py, store/kept_fields.py).

Pure: the view over a hand-made ResultRef and the activity's extraction, no Temporal."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.stored_results import StoredResult, lazy_parts
from noetl_temporal.errors import ResultFieldUnavailable
from noetl_temporal.store.kept_fields import KEEP_MAX_BYTES, kept_fields
from noetl_temporal.templates import evaluate_condition, render

BIG = {"count": 6000, "name": "n", "rows": [{"id": i, "pad": "x" * 100} for i in range(2000)],
       "note": "y" * 5000}


def _ref(value=BIG, keep=("count", "rows.0.id", "rows", "missing")) -> dict:
    return {"kind": "result_ref", "ref": "noetl://fs/e/k.json", "store": "fs", "meta": {"bytes": 3_000_000},
            "extracted": {"t": 1}, **kept_fields(value, keep)}


def test_kept_fields_keep_named_paths_within_the_budget_and_small_scalars():
    ref = _ref()
    assert ref["fields"] == {"count": 6000, "rows.0.id": 0, "name": "n"}   # `note` is over 1,024 characters
    assert ref["omitted"]["rows"] > KEEP_MAX_BYTES and ref["absent"] == ["missing"]


def test_templates_read_kept_fields_at_their_own_paths():
    scope = {"start": StoredResult(_ref(), "start")}
    assert render("{{ start.count }}", scope) == 6000
    assert render("{{ start.rows[0].id }}", scope) == 0
    assert evaluate_condition("{{ start.count > 100 }}", scope) == (True, None)
    assert render("{{ start.missing is defined }}", scope) is False       # absent: undefined, as inline
    assert render("{{ start.kind }}", scope) == "result_ref"              # the ref's own keys, unshadowed
    assert render("{{ start.extracted.t }}", scope) == 1
    assert render("{{ start._ref.ref }}", scope) == "noetl://fs/e/k.json"  # NoETL's names
    assert render("{{ start._preview is defined }}", scope) is True
    assert render("{{ start }}", scope)["ref"] == "noetl://fs/e/k.json"   # whole: the reference


@pytest.mark.parametrize("template", ["{{ start.rows | sum(attribute='id') > 100 }}", "{{ start.other == 1 }}",
                                      "{% for r in start.rows %}{% endfor %}", "{{ start | length }}"])
def test_what_is_not_held_fails_located_with_its_size(template):
    scope = {"start": StoredResult(_ref(), "start")}
    with pytest.raises(ResultFieldUnavailable) as caught:
        evaluate_condition(template, scope, where="start.next.arcs[0].when")
    text = str(caught.value)
    assert text.startswith("start.next.arcs[0].when: `start") and template in text and "MB" in text


def test_a_part_not_held_is_a_reference_to_it_only_in_a_task_configuration():
    scope = {"start": StoredResult(_ref(), "start")}
    with pytest.raises(ResultFieldUnavailable):
        render("{{ start.rows }}", scope)
    with lazy_parts():
        part = render("{{ start.rows }}", scope)
    assert part == {"kind": "result_ref", "ref": "noetl://fs/e/k.json", "store": "fs",
                    "meta": {"bytes": 3_000_000}, "path": ["rows"]}


def test_printed_into_text_the_whole_is_its_reference_and_a_part_not_held_fails():
    scope = {"start": StoredResult(_ref(), "start")}
    assert '"ref": "noetl://fs/e/k.json"' in render("echo {{ start }}", scope)
    assert render("n={{ start.count }}", scope) == "n=6000"
    with lazy_parts(), pytest.raises(ResultFieldUnavailable):  # a reference inside a string is never read back
        render("echo {{ start.rows }}", scope)


def _loop_scope() -> dict:
    from noetl_temporal.engine.stored_results import StoredLayer
    result = {"results": [_ref(), {"count": 1}, None], "count": 3, "done": 3, "failed": 0, "failed_iterations": []}
    return {"each": StoredLayer({"each": result}, frozenset({"each"}))["each"]}


def test_a_loops_stored_iteration_results_read_through_their_kept_fields():
    scope = _loop_scope()
    assert render("{{ each.results[0].count }}", scope) == 6000
    assert render("{{ each.results[-3].rows[0].id }}", scope) == 0
    assert render("{{ each.results[1].count }}", scope) == 1              # an inline iteration, as it is
    assert render("{{ each.results | length }}, {{ each.count }}", scope) == "3, 3"
    assert render("{{ each.results[:2] | map(attribute='count') | list }}", scope) == [6000, 1]
    assert render("{% for r in each.results %}{{ r.count if r else '-' }} {% endfor %}", scope) == "6000 1 - "
    whole = render("{{ each.results }}", scope)                           # whole: the list, refs as they are
    assert type(whole) is list and whole[0]["kind"] == "result_ref" and whole[1] == {"count": 1}
    assert render("{{ each.results | tojson }}", scope).startswith('[{"kind": "result_ref"')
    assert render("{{ each.results == [] }}", scope) is False
    with pytest.raises(ResultFieldUnavailable, match="iteration result `each.results.0` of loop step `each`"):
        render("{{ each.results[0].other }}", scope)


def test_a_loops_results_view_concatenates_as_the_list_did():
    """`results + [x]` worked on the plain list before the view; it still gives a list."""
    from noetl_temporal.engine.stored_results import StoredLayer
    from noetl_temporal.templates import render

    layer = StoredLayer({"each": {"results": [{"count": 1}, {"count": 2}], "count": 2}}, loops={"each"})
    scope = {"each": layer["each"]}
    assert render("{{ each.results + [9] }}", scope) == [{"count": 1}, {"count": 2}, 9]
    assert render("{{ [0] + each.results }}", scope) == [0, {"count": 1}, {"count": 2}]
    assert render("{{ (each.results + each.results) | length }}", scope) == 4


def test_an_omitted_parts_length_reads_as_the_inline_one_did():
    """`{{ start.rows | length }}` on a stored result whose `rows` is over the budget: the
    activity records the length, so the count is the same at any size."""
    ref = _ref()
    assert ref["lengths"] == {"rows": len(BIG["rows"])}
    scope = {"start": StoredResult(ref, "start")}
    assert render("{{ start.rows | length }}", scope) == len(BIG["rows"])
    assert render("{{ start.rows | length > 100 }}", scope) is True
    assert render("{{ 'many' if start.rows else 'none' }}", scope) == "many"
