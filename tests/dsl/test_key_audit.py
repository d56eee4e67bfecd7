"""Issue 37 item 3, the audit: every key the playbook models accept acts, or is documented
as accepted and ignored.

The models of ``noetl_temporal/dsl/models.py`` are walked from ``Playbook``; each field is
``Model.field`` and an open model's keys beyond its fields are ``Model.*``. Each must be in
exactly one of: :data:`EFFECTS` (the test that shows what the key does), the "Accepted and
ignored" table of docs/dialect-aliases.md (with its reason), or be a block whose own keys are
audited (a field holding a model). A new field, or a model made open, fails here until it is
given an effect and a test, or a documented reason.
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from noetl_temporal.dsl.models import Playbook
from noetl_temporal.dsl.open_keys import IGNORED_EXTRAS, SPEC_LAYERS
from noetl_temporal.graphview.model import graph_view

from .helpers import playbook

REPO = Path(__file__).resolve().parents[2]

#: ``Model.field`` -> the test showing its effect (``path::test_name``, checked to exist)
EFFECTS: dict[str, str] = {
    "Playbook.apiVersion": "tests/dsl/test_rejections.py::test_api_version_mismatch_is_a_warning",
    "Playbook.kind": "tests/dsl/test_rejections.py::test_kind_must_be_playbook",
    "Playbook.workload": "tests/cli/test_cli_run.py::test_readme_example_runs_and_prints_the_json_report",
    "Playbook.workbook": "tests/dsl/test_normalize.py::test_workbook_reference_is_replaced_by_entry_tool",
    "Playbook.spec": "tests/dsl/test_key_audit.py::test_root_spec_reaches_templates",
    "Metadata.name": "tests/dsl/test_key_audit.py::test_metadata_names_the_execution_and_the_graph",
    "Metadata.path": "tests/dsl/test_key_audit.py::test_metadata_names_the_execution_and_the_graph",
    "KeychainEntry.name": "tests/keychain/test_keychain.py::test_env_provider_json_dsn_string_and_fields",
    "KeychainEntry.*": "tests/keychain/test_keychain.py::test_env_provider_json_dsn_string_and_fields",
    "Executor.requires": "tests/workflow/test_noetl_additions.py::"
                         "test_run_refuses_a_playbook_requiring_what_the_worker_lacks_naming_it",
    "ExecutorRequires.tools": "tests/dsl/test_requires.py::test_each_missing_item_is_named_and_located",
    "ExecutorRequires.features": "tests/dsl/test_requires.py::"
                                 "test_a_feature_no_worker_provides_warns_and_the_playbook_is_valid_as_on_noetl",
    "ExecutorSpec.entry_step": "tests/engine/test_routing.py::test_entry_step_override",
    "ExecutorSpec.final_step": "tests/engine/test_routing.py::"
                               "test_fail_fast_cancels_in_flight_branches_then_runs_final_step",
    "ExecutorSpec.no_next_is_error": "tests/workflow/test_routing_on_temporal.py::test_no_next_is_error",
    "ExecutorSpec.max_jumps": "tests/engine/test_pipeline_and_loops.py::test_jump_cycle_is_capped",
    "ExecutorSpec.max_step_runs": "tests/engine/test_routing.py::test_routing_cycle_without_exit_hits_the_step_run_limit",
    "ExecutorSpec.timeout_s": "tests/workflow/test_failure_modes.py::test_execution_timeout_ends_failed",
    "ExecutorSpec.local": "tests/workflow/test_fast_path.py::test_a_chain_on_the_fast_path_runs_as_local_activities",
    "ExecutorSpec.strict_templates": "tests/workflow/test_runtime_mistakes.py::test_strict_makes_it_a_located_task_error",
    "ExecutorSpec.*": "tests/workflow/test_routing_on_temporal.py::test_spec_layering_gives_tool_defaults_per_kind",
    "FailurePolicy.mode": "tests/engine/test_routing.py::test_fail_fast_cancels_in_flight_branches_then_runs_final_step",
    "WorkbookTask.name": "tests/dsl/test_normalize.py::test_workbook_reference_is_replaced_by_entry_tool",
    "WorkbookTask.tool": "tests/dsl/test_normalize.py::test_workbook_reference_is_replaced_by_entry_tool",
    "Step.step": "tests/engine/test_routing.py::test_entry_step_override",
    "Step.desc": "tests/dsl/test_key_audit.py::test_step_desc_is_shown_in_the_graph",
    "Step.input": "tests/dsl/test_key_audit.py::test_step_input_is_merged_under_each_tasks_input",
    "Step.set_ctx": "tests/workflow/test_routing_on_temporal.py::test_guarded_cycle",
    "Step.set_iter": "tests/workflow/test_routing_on_temporal.py::test_guarded_cycle",
    "StepSpec.failure": "tests/dsl/test_key_audit.py::test_a_steps_failure_mode_decides_what_its_failure_stops",
    "StepSpec.lifecycle": "tests/workflow/test_fast_path.py::test_a_step_timeout_cancels_a_task_on_the_fast_path",
    "StepSpec.timeout": "tests/engine/test_step_timeout.py::"
                        "test_step_timeout_fires_cancels_the_task_and_fails_the_step_with_a_located_message",
    "StepSpec.local": "tests/workflow/test_fast_path.py::test_a_failure_on_the_fast_path_routes_like_any_other",
    "StepSpec.*": "tests/workflow/test_routing_on_temporal.py::test_spec_layering_gives_tool_defaults_per_kind",
    "StepPolicy.admit": "tests/engine/test_routing.py::test_admission_deny_keeps_token_pending_and_reports_it",
    "StepPolicy.failure": "tests/dsl/test_key_audit.py::test_a_steps_failure_mode_decides_what_its_failure_stops",
    "AdmitPolicy.mode": "tests/engine/test_routing.py::test_admission_deny_keeps_token_pending_and_reports_it",
    "AdmitPolicy.rules": "tests/engine/test_routing.py::test_denied_token_is_admitted_after_a_ctx_patch_approval_gate",
    "AdmitPolicy.on_deny": "tests/engine/test_routing.py::test_on_deny_modes",
    "AdmitRule.when": "tests/engine/test_routing.py::test_denied_token_is_admitted_after_a_ctx_patch_approval_gate",
    "AdmitRule.allow": "tests/engine/test_routing.py::test_admission_deny_keeps_token_pending_and_reports_it",
    "Lifecycle.timeout_s": "tests/cli/test_cli_honoured_keys.py::"
                           "test_step_policy_lifecycle_timeout_fails_the_step_without_waiting_for_its_task",
    "Loop.in_": "tests/engine/test_pipeline_and_loops.py::test_loop_of_pipelines_with_set_iter_isolated_per_iteration",
    "Loop.iterator": "tests/engine/test_pipeline_and_loops.py::test_loop_of_pipelines_with_set_iter_isolated_per_iteration",
    "LoopSpec.mode": "tests/engine/test_routing.py::test_exclusive_and_inclusive_routing",
    "LoopSpec.max_in_flight": "tests/engine/test_templated_numbers.py::"
                              "test_a_templated_max_in_flight_is_rendered_when_the_loop_starts",
    "LoopSpec.frame": "tests/engine/test_cursor_loops.py::test_process_frame_makes_each_page_one_iteration",
    "Cursor.kind": "tests/workflow/test_cursor_loops.py::test_a_duckdb_claim_loop_drains_its_queue",
    "Cursor.claim": "tests/engine/test_cursor_loops.py::test_every_row_runs_once_and_the_loop_keeps_counts_not_rows",
    "Cursor.*": "tests/workflow/test_cursor_loops.py::test_a_postgres_claim_loop_reads_10000_rows_a_page_at_a_time",
    "LoopSpec.local": "tests/workflow/test_fast_path.py::test_a_chain_on_the_fast_path_runs_as_local_activities",
    "LoopSpec.*": "tests/workflow/test_routing_on_temporal.py::test_spec_layering_gives_tool_defaults_per_kind",
    "Task.name": "tests/dsl/test_normalize.py::test_workbook_reference_in_list_keeps_label",
    "Task.kind": "tests/dsl/test_normalize.py::test_tool_shapes",
    "Task.config": "tests/tools/test_tool_http.py::test_get_json",
    "Task.set_ctx": "tests/engine/test_pipeline_and_loops.py::test_prev_and_task_labels_and_set_ctx_in_pipeline",
    "Task.set_iter": "tests/engine/test_pipeline_and_loops.py::test_loop_of_pipelines_with_set_iter_isolated_per_iteration",
    "Task.set_vars": "tests/dsl/test_key_audit.py::test_arc_and_task_set_patches_take_effect",
    "TaskSpec.timeout": "tests/cli/test_cli_honoured_keys.py::"
                        "test_http_read_timeout_in_noetls_shape_fails_the_task_and_a_number_still_works",
    "TaskSpec.local": "tests/workflow/test_fast_path.py::test_a_policy_retry_on_the_fast_path",
    "TaskSpec.*": "tests/workflow/test_routing_on_temporal.py::test_spec_layering_gives_tool_defaults_per_kind",
    "TaskPolicy.rules": "tests/engine/test_pipeline_and_loops.py::test_retry_delay_table",
    "TaskPolicy.on_unmatched": "tests/engine/test_on_unmatched.py::test_on_unmatched_decides_only_when_no_rule_matches",
    "PolicyRule.when": "tests/engine/test_on_unmatched.py::test_on_unmatched_decides_only_when_no_rule_matches",
    "PolicyRule.then": "tests/engine/test_pipeline_and_loops.py::test_retry_delay_table",
    "PolicyAction.do": "tests/engine/test_pipeline_and_loops.py::test_jump_cycle_is_capped",
    "PolicyAction.attempts": "tests/engine/test_templated_numbers.py::"
                             "test_templated_retry_numbers_are_rendered_once_when_the_task_is_scheduled",
    "PolicyAction.backoff": "tests/workflow/test_retries_and_pipelines.py::"
                            "test_different_rules_different_attempts_and_backoff_timing",
    "PolicyAction.delay": "tests/engine/test_pipeline_and_loops.py::test_retry_delay_table",
    "PolicyAction.max_delay": "tests/engine/test_templated_numbers.py::"
                              "test_templated_retry_numbers_are_rendered_once_when_the_task_is_scheduled",
    "PolicyAction.to": "tests/engine/test_pipeline_and_loops.py::test_jump_cycle_is_capped",
    "PolicyAction.set_ctx": "tests/workflow/test_corpus_http.py::test_pipeline_error_handling_policies",
    "PolicyAction.set_iter": "tests/engine/test_pipeline_and_loops.py::"
                             "test_loop_of_pipelines_with_set_iter_isolated_per_iteration",
    "PolicyAction.set_vars": "tests/workflow/test_corpus_http.py::test_pipeline_error_handling_policies",
    "ResultSpec.inline_max_bytes": "tests/store/test_large_results.py::test_thresholds_and_preview",
    "ResultSpec.store": "tests/store/test_large_results.py::test_large_result_goes_to_the_fs_store",
    "ResultSpec.select": "tests/workflow/test_data_tools.py::test_large_result_travels_by_reference",
    "ResultSpec.preview": "tests/store/test_large_results.py::test_thresholds_and_preview",
    "ResultSpec.preview_max_bytes": "tests/workflow/test_noetl_additions.py::"
                                    "test_output_stores_by_reference_with_extracted_values_and_a_byte_preview",
    "ResultSpec.keep": "tests/store/test_large_results.py::"
                       "test_a_stored_result_keeps_the_named_fields_and_a_part_reference_reads_its_part",
    "Router.arcs": "tests/engine/test_routing.py::test_exclusive_and_inclusive_routing",
    "RouterSpec.mode": "tests/engine/test_routing.py::test_exclusive_and_inclusive_routing",
    "RouterSpec.on_no_match": "tests/workflow/test_noetl_additions.py::test_on_no_match",
    "Arc.step": "tests/engine/test_routing.py::test_exclusive_and_inclusive_routing",
    "Arc.when": "tests/engine/test_routing.py::test_exclusive_and_inclusive_routing",
    "Arc.args": "tests/engine/test_joins.py::test_exclusive_diamond_is_not_a_join_and_passes_args_as_they_are",
    "Arc.set_ctx": "tests/dsl/test_key_audit.py::test_arc_and_task_set_patches_take_effect",
}

#: ``Model.field`` the model accepts and a later pass refuses -> the test showing the refusal
REFUSED: dict[str, str] = {
    "Step.set_iter": "tests/dsl/test_semantics.py::test_semantic_check",
    "Arc.set_iter": "tests/dsl/test_semantics.py::test_semantic_check",
}

#: fields no source key fills: a step's and an arc's plain `set:` names go to ctx and to the
#: arc's `args` (keys.MODEL_ONLY); they share the field with tasks through ``Patches``
MODEL_ONLY = {"Step.set_vars", "Arc.set_vars"}


# --------------------------------------------------------------------------- the walk

def _models(annotation: typing.Any) -> list[type[BaseModel]]:
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def accepted_keys() -> tuple[set[str], set[str]]:
    """(every ``Model.field`` and ``Model.*`` the models accept, the fields that are blocks)."""
    seen: list[type[BaseModel]] = []
    keys: set[str] = set()
    blocks: set[str] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        if model.model_config.get("extra") != "forbid":
            keys.add(f"{model.__name__}.*")
        for name, info in model.model_fields.items():
            inner = _models(info.annotation)
            (blocks if inner else keys).add(f"{model.__name__}.{name}")
            for sub in inner:
                walk(sub)

    walk(Playbook)
    return keys, blocks


def documented_ignored() -> set[str]:
    page = (REPO / "docs" / "dialect-aliases.md").read_text(encoding="utf-8")
    section = page.split("## Accepted and ignored", 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\|[^|]*\| `([A-Za-z]+\.(?:\*|\w+))` \|", section, re.M)}


def _test_exists(ref: str) -> bool:
    path, name = ref.split("::")
    file = REPO / path
    if not file.is_file():
        return False
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in ast.walk(tree))


def test_every_accepted_key_has_an_effect_or_a_documented_reason():
    keys, _ = accepted_keys()
    ignored = documented_ignored()
    assert ignored, "docs/dialect-aliases.md lost its 'Accepted and ignored' table"
    silent = sorted(keys - set(EFFECTS) - set(REFUSED) - ignored - MODEL_ONLY)
    assert not silent, f"accepted, with no effect a test shows and no documented reason: {silent}"
    both = sorted(set(EFFECTS) & ignored)
    assert not both, f"both acting and documented as ignored: {both}"


def test_the_tables_name_only_keys_the_models_accept():
    keys, blocks = accepted_keys()
    assert sorted((set(EFFECTS) | set(REFUSED) | MODEL_ONLY) - keys - blocks) == []
    # a documented key is a field, or an extra key of an open model that open_keys lets through
    assert sorted(documented_ignored() - keys - blocks - set(IGNORED_EXTRAS)) == []


@pytest.mark.parametrize("key", sorted({**EFFECTS, **REFUSED}))
def test_each_effect_names_a_test_that_exists(key):
    ref = {**EFFECTS, **REFUSED}[key]
    assert _test_exists(ref), f"{key}: no test {ref}"


def test_the_ignored_spec_keys_of_open_keys_are_documented():
    assert set(IGNORED_EXTRAS) <= documented_ignored()
    assert {f"{m}.*" for m in SPEC_LAYERS} <= set(EFFECTS)  # tool defaults


# --------------------------------------------------------------------------- effects shown here

def _engine_run(body: str, *, header: bool = True, **kw):
    from tests.engine.harness import run  # the engine tier's harness: fake outcomes, no Temporal

    return run(playbook(body) if header else body, **kw)


def test_root_spec_reaches_templates():
    r = _engine_run("""
        spec: {region: eu}
        workflow:
          - step: a
            tool: {kind: shell, cmd: "echo {{ spec.region }}"}
        """)
    assert r.ran[0].config["cmd"] == "echo eu"


def test_step_input_is_merged_under_each_tasks_input():
    r = _engine_run("""
        workflow:
          - step: a
            input: {page: 1, size: 10}
            tool: {kind: shell, cmd: x, input: {size: 5}}
        """)
    assert r.ran[0].config["input"] == {"page": 1, "size": 5}


def test_metadata_names_the_execution_and_the_graph():
    from noetl_temporal.dsl import load_playbook_text

    for meta, name in (("name: t", "t"), ("path: team/etl", "team/etl")):
        text = f"metadata: {{{meta}}}\nworkflow:\n  - step: a\n    tool: {{kind: noop}}\n"
        pb = load_playbook_text(text).playbook
        assert graph_view(pb).name == name
        r = _engine_run(text, header=False)
        started = [e for e in r.events if e["event_type"] == "playbook.execution.requested"]
        assert started and started[0]["payload"]["meta"]["playbook"] == name


def test_step_desc_is_shown_in_the_graph():
    from noetl_temporal.dsl import load_playbook_text

    pb = load_playbook_text(playbook("""
        workflow:
          - step: a
            desc: fetch the users
            tool: {kind: noop}
        """)).playbook
    assert any(getattr(node, "desc", None) == "fetch the users" for node in graph_view(pb).nodes)


@pytest.mark.parametrize("where", ["spec: {failure: {mode: %s}}", "spec: {policy: {failure: {mode: %s}}}"])
def test_a_steps_failure_mode_decides_what_its_failure_stops(where):
    from tests.engine.harness import err, ok

    body = """
        workflow:
          - step: a
            tool: {kind: shell, cmd: x}
            next: {spec: {mode: inclusive}, arcs: [{step: b}, {step: c}]}
          - step: b
            %s
            tool: {kind: shell, cmd: y}
          - step: c
            tool: {kind: shell, cmd: z}
            next: {arcs: [{step: d}]}
          - step: d
            tool: {kind: shell, cmd: w}
        """

    def fail_b(cmd):
        return err() if cmd.step == "b" else ok(1)

    best = _engine_run(body % (where % "best_effort"), tool=fail_b, hold=lambda cmd: cmd.step == "c")
    fast = _engine_run(body % (where % "fail_fast"), tool=fail_b, hold=lambda cmd: cmd.step == "c")
    assert best.cancelled == [] and not best.state.stopping
    held = [c for c in fast.ran if c.step == "c"]
    assert fast.cancelled == [held[0].task_run_id]   # fail_fast cancels what is in flight


def test_arc_and_task_set_patches_take_effect():
    r = _engine_run("""
        workflow:
          - step: a
            loop: {in: [1, 2], iterator: x}
            tool:
              - {name: t1, kind: noop, result: 1, set: {local: "v{{ x }}"}}
              - {name: t2, kind: noop, result: "{{ local }}"}
            next: {arcs: [{step: b, set: {ctx.from_arc: 4, plain: 5}}]}
          - step: b
            tool: {kind: noop, result: "{{ ctx.from_arc }}/{{ args.plain }}"}
        """)
    assert r.state.step_results["a"]["results"] == ["v1", "v2"]  # a task's plain `set:` names
    assert r.state.ctx["from_arc"] == 4 and r.state.step_results["b"] == "4/5"
