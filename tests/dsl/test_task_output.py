"""A task's ``output:`` (NoETL 5.x ``tool.output``): what maps onto ``spec.result`` and
pipeline-local names, and a located NTL313 for what does not (docs/tools.md)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import load_playbook_text

from .helpers import codes, errors, find, playbook, warnings


def task(output: str) -> str:
    return playbook(f"workflow:\n  - step: a\n    tool:\n      kind: noop\n      output: {output}\n")


def test_what_maps_becomes_the_result_spec_and_names():
    loaded = load_playbook_text(task('{select: [{path: "$.data[\'next page\'][0]", as: nxt}], as: page, '
                                     'inline_max_bytes: 0, preview_max_bytes: 8, scope: step, store: {kind: db}}'))
    (t,) = loaded.playbook.workflow[0].tool
    assert t.spec.result is not None
    assert (t.spec.result.inline_max_bytes, t.spec.result.preview_max_bytes, t.spec.result.store) == (0, 8, "postgres")
    assert t.spec.result.select == {"nxt": "data.next page.0"}
    assert set(t.set_vars) == {"nxt", "page"} and t.set_vars["page"] == "{{ output }}"
    assert "output" not in t.config


@pytest.mark.parametrize("output, at, says", [
    ("{store: {kind: memory}}", "memory", "never kept in a worker's memory"),
    ('{select: [{path: "$..id", as: ids}]}', '"$..id', "not a plain JSONPath"),
    ('{select: [{path: "$.items[*]", as: ids}]}', '"$.items', "not a plain JSONPath"),
    ('{select: [{path: "$.a", as: "two words"}]}', '"two words', "must be a name"),
    ("{accumulate: {enabled: true}}", "accumulate", "already is the list"),
    ("{scope: forever}", "forever", "not one of step, execution"),
    ("{inline_max_bytes: -1}", "-1", "whole number of bytes"),
    ("{colour: red}", "colour", "has no setting `colour`"),
    ("{output_select: [status, data.id]}", "data.id", "only a top-level key"),
    ("{output_select: status}", "status", "must be a list of keys"),
])
def test_what_does_not_map_is_one_located_error(output, at, says):
    text = task(output)
    (diag,) = errors(text)
    assert diag.code == "NTL313" and says in diag.message, diag.message
    assert (diag.line, diag.col) == find(text, at)


def test_noetls_kv_store_is_the_workers_result_store():
    """NoETL's `kv` holds the stored result behind its reference; here the worker's default
    store does, and templates read it through the reference the same way."""
    (t,) = load_playbook_text(task("{store: {kind: kv}, inline_max_bytes: 0}")).playbook.workflow[0].tool
    assert t.spec.result is not None
    assert (t.spec.result.store, t.spec.result.inline_max_bytes) == (None, 0)
    assert errors(task("{store: {kind: kv}}")) == []


def test_object_store_settings_are_warned_not_silently_dropped():
    text = task("{store: {kind: disk, bucket: b}}")
    assert errors(text) == []
    assert codes(warnings(text)) == ["NTL312"]


def test_output_select_keeps_top_level_keys():
    (t,) = load_playbook_text(task("{output_select: [status, '$.count', status]}")).playbook.workflow[0].tool
    assert t.spec.result is not None and t.spec.result.keep == ["status", "count"]


@pytest.mark.parametrize("kind, code, service", [("gcs", "NTL343", "Google Cloud Storage"),
                                                 ("s3", "NTL344", "Amazon S3")])
def test_a_cloud_store_tier_is_refused_naming_the_service(kind, code, service):
    text = task(f"{{store: {{kind: {kind}}}}}")
    (diag,) = errors(text)
    assert (diag.code, (diag.line, diag.col)) == (code, find(text, kind + "}"))
    assert service in diag.message and "kind: auto" in diag.fix


def test_noetls_removed_object_tier_is_disk_as_noetl_reads_it():
    (t,) = load_playbook_text(task("{store: {kind: object}}")).playbook.workflow[0].tool
    assert t.spec.result is not None and t.spec.result.store == "fs"


def test_an_output_block_without_a_budget_has_noetls_64_kib():
    """NoETL stores a result over 64 KiB; a playbook written for it expects `_ref` at that size."""
    (t,) = load_playbook_text(task("{output_select: [status]}")).playbook.workflow[0].tool
    assert t.spec.result is not None and t.spec.result.inline_max_bytes == 64 * 1024


def step_output(output: str, tool: str = "{kind: noop}") -> str:
    return playbook(f"workflow:\n  - step: a\n    tool: {tool}\n    output: {output}\n")


def test_a_step_output_is_its_last_tasks_output():
    text = step_output("{output_select: [status], store: {kind: disk}}",
                       tool="[{name: one, kind: noop}, {name: two, kind: noop}]")
    assert errors(text) == []
    one, two = load_playbook_text(text).playbook.workflow[0].tool
    assert one.spec is None or one.spec.result is None
    assert two.spec is not None and two.spec.result is not None
    assert (two.spec.result.keep, two.spec.result.store, two.spec.result.inline_max_bytes) == (
        ["status"], "fs", 64 * 1024)


def test_the_tasks_own_output_wins_over_the_steps():
    text = playbook("workflow:\n  - step: a\n    tool: {kind: noop, output: {inline_max_bytes: 10}}\n"
                    "    output: {inline_max_bytes: 99, store: {kind: db}}\n")
    (t,) = load_playbook_text(text).playbook.workflow[0].tool
    assert t.spec is not None and t.spec.result is not None
    assert (t.spec.result.inline_max_bytes, t.spec.result.store) == (10, "postgres")


def test_a_step_outputs_errors_are_located_at_the_step():
    text = step_output("{store: {kind: gcs}}")
    (diag,) = errors(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == ("NTL343", "workflow[0].output.store.kind",
                                                             find(text, "gcs"))
