"""The users' corpus (tests/corpus/noetl) runs end to end on the dev server.

Only playbooks that need no outside service (internet, the NoETL test server, a
catalog-registered child) run here; their expectations come from the corpus INDEX.md.
"""

from __future__ import annotations

import pytest

from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook

from ..conftest import CORPUS

pytestmark = pytest.mark.temporal

SELF_CONTAINED = [
    "e2e_hello_world", "e2e_start_with_action", "e2e_end_with_action", "e2e_args_passing",
    "e2e_comprehensive_branching", "e2e_implicit_end_routing", "e2e_simple_loop",
    "e2e_loop_instance_isolation", "e2e_heavy_loop_aggregation", "e2e_control_flow_workbook",
    "e2e_fanout_reduce_phase6", "e2e_user_profile_scorer", "nn_arc_when_call_done",
    "nn_conditional_with_fallback", "nn_dead_end_unmatched_arc", "nn_quiet_branch_end",
    "nn_policy_set_ctx_sync", "nn_step_result_reference", "nn_shell_terminal_step_done",
    "nn_inclusive_fanout_metadata", "nn_fanout_no_reducer", "e2e_duckdb_retry_query",
]


async def run(temporal, task_queue, name):
    path = CORPUS / f"{name}.yaml"
    return await run_with_client(temporal.client, load_playbook(path).playbook, task_queue=task_queue,
                                 source=str(path), execution_timeout_s=120)


def started(report):
    return [e["entity_id"] for e in report.events if e["event_type"] == "step.started"]


@pytest.mark.parametrize("name", SELF_CONTAINED)
async def test_corpus_playbook_completes(temporal, task_queue, name):
    report = await run(temporal, task_queue, name)
    assert report.state == "COMPLETED", report.error


async def test_hello_world_expectations(temporal, task_queue):
    report = await run(temporal, task_queue, "e2e_hello_world")
    assert started(report) == ["start", "test_step", "end"]
    assert report.steps["test_step"]["result"]["data"]["message"] == "Hello World"


async def test_fanout_reduce_barrier_runs_reduce_once_after_both_branches(temporal, task_queue):
    report = await run(temporal, task_queue, "e2e_fanout_reduce_phase6")
    assert started(report).count("reduce_customer") == 1
    done = [e["entity_id"] for e in report.events if e["event_type"] == "step.done"]
    assert done.index("reduce_customer") > max(done.index("normalize_customer"), done.index("enrich_customer"))


async def test_loop_results_are_kept_per_iteration(temporal, task_queue):
    report = await run(temporal, task_queue, "e2e_loop_instance_isolation")
    assert len(report.steps["process_items_users"]["result"]["results"]) == 2
    assert len(report.steps["process_items_products"]["result"]["results"]) == 2


async def test_control_flow_workbook_runs_the_hot_fanout_and_joins_at_end(temporal, task_queue):
    report = await run(temporal, task_queue, "e2e_control_flow_workbook")
    names = started(report)
    assert len(names) >= 5 and names.count("end") == 1
    assert {"hot_task_a", "hot_task_b"} <= set(names)


async def test_args_passing_keeps_native_ints(temporal, task_queue):
    report = await run(temporal, task_queue, "e2e_args_passing")
    assert report.steps["use_vars"]["result"]["result"] == 300


async def test_python_retry_counts_real_attempts(temporal, task_queue):
    report = await run(temporal, task_queue, "e2e_python_retry_exception")
    attempts = [e["attempt"] for e in report.events if e["event_type"].startswith("task.attempt.")
                and e["event_type"] != "task.attempt.started" and e["entity_id"] == "start_task"]
    assert attempts == list(range(1, len(attempts) + 1)) and 1 <= len(attempts) <= 5
    succeeded = any(e["event_type"] == "task.attempt.done" and e["entity_id"] == "start_task"
                    for e in report.events)
    assert report.state == ("COMPLETED" if succeeded else "FAILED")   # random by design (INDEX.md)


async def test_postgres_corpus_playbook_with_a_keychain_entry_from_the_environment(temporal, task_queue,
                                                                                    monkeypatch):
    """`auth: pg_k8s` resolves from NOETL_KEYCHAIN_PG_K8S (see docs/keychain.md)."""
    import json

    from tests.support.postgres import fields, require_dsn

    monkeypatch.setenv("NOETL_KEYCHAIN_PG_K8S", json.dumps(fields(require_dsn())))
    report = await run(temporal, task_queue, "e2e_postgres_retry_connection")
    assert report.state == "COMPLETED", report.error
    assert report.steps["start"]["result"]["rows"] == [{"test_value": 1}]
