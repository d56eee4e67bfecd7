"""What each valid file of NoETL's e2e fixture set needs to run, and which ones run here.

Every playbook of ``tests/corpus/noetl-e2e`` that validates (docs/noetl-e2e-fates.md) has
one row in :data:`NEEDS`: what it needs, with one reason. The files that need only the
local services the project already tests with (:data:`LOCAL`: PostgreSQL at 127.0.0.1:5432
through the keychain, duckdb, the loopback stand-in of NoETL's paginated test server,
sub-playbooks registered in the catalog) run end to end on the dev server in
``tests/workflow/test_e2e_runs.py``, each with the outcome its row states.

``docs/noetl-e2e-runs.md`` is generated from :func:`markdown`
(``python -m tests.dsl.e2e_needs > docs/noetl-e2e-runs.md``); ``tests/dsl/test_e2e_needs.py``
keeps the page, the table and the set of valid files in step, and the runnable count
equal to :data:`RUNNABLE_COUNT`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from .e2e_fates import CONFIG, P, _cell, expected_by_noetl, fates, refused_though_noetl_runs_it_here

LOCAL = "local"        # PostgreSQL (keychain), duckdb, NATS, the paginated stand-in, the catalog
INTERNET = "internet"  # public endpoints on the internet, no account
CLOUD = "cloud"        # a cloud service or vendor API with an account (GCP, OpenAI, Auth0 ...)
NOETL = "noetl"        # NoETL's own server, database schema, cluster services or Python package

KINDS = {
    LOCAL: "only local services this project tests with: PostgreSQL at 127.0.0.1:5432 through the "
           "keychain, duckdb, NATS with JetStream (`nats-server -js`) through the keychain, the loopback stand-in of NoETL's paginated test server "
           "(tests/support/paginated_api.py), sub-playbooks from the catalog",
    INTERNET: "public internet endpoints (no account); the test machines have no internet",
    CLOUD: "a cloud service or vendor API with an account and credentials",
    NOETL: "NoETL's own server API, its database schema, services of its Kubernetes cluster or its "
           "Python package",
}

COMPLETED = "COMPLETED"
FAILED = "FAILED"

#: how many valid files run here (tests/dsl/test_e2e_needs.py checks it against the table)
RUNNABLE_COUNT = 80


@dataclass(frozen=True)
class Need:
    needs: str                 # one of KINDS
    reason: str                # what it needs; for LOCAL, what it exercises
    expect: str = ""           # LOCAL: the execution state a correct run ends in
    basis: str = ""            # LOCAL: where that expectation comes from
    payload: dict[str, Any] = field(default_factory=dict)  # LOCAL: request payload over the workload
    setup: tuple[str, ...] = ()  # LOCAL: fixtures (keys of NEEDS) run first, as NoETL's `requires_setup`
    differs: str = ""          # LOCAL: why the run here does not end as `expect` (a deliberate difference)
    fails_with: str = ""       # LOCAL with `differs`, or `expect` FAILED: what the run's error says


def _local(reason: str, expect: str = COMPLETED, basis: str = "", **kw: Any) -> Need:
    return Need(LOCAL, reason, expect, basis or ("cfg" if expect == COMPLETED else ""), **kw)


_NONE_STATED = "none stated: a correct run completes"
_SHORT = "the delays that outlast NoETL's 120 s NATS lease are cut to 1 s"

#: our stand-ins for the script files two fixtures load, relative to the repository root,
#: where the tests run (the worker resolves a relative `script` file from its working directory)
_SCRIPTS = "tests/support/noetl_scripts/"

#: every valid file (relative to tests/corpus/noetl-e2e) -> what it needs
NEEDS: dict[str, Need] = {
    P + "actions_test.yaml": _local("python only: a loop, call and retry actions", basis=_NONE_STATED),
    P + "api_integration/amadeus_ai_api/amadeus_ai_api_test.yaml": Need(CLOUD, "OpenAI's API"),
    P + "api_integration/amadeus_ai_chat_request_query/amadeus_ai_chat_request_query.yaml": Need(
        CLOUD, "Amadeus and OpenAI APIs, GCP secrets"),
    P + "api_integration/amadeus_ai_token_smoke/amadeus_ai_token_smoke.yaml": Need(
        CLOUD, "Amadeus OAuth and OpenAI, GCP secrets"),
    P + "api_integration/auth0/auth0_login.yaml": Need(CLOUD, "an Auth0 tenant (its token's JWKS), then NATS"),
    P + "api_integration/auth0/auth0_login_optimized.yaml": Need(
        CLOUD, "an Auth0 tenant (its token's JWKS), then NATS"),
    P + "api_integration/auth0/auth0_validate_session.yaml": Need(
        NOETL, "NoETL's auth schema with a session an Auth0 login stored, then NATS"),
    P + "api_integration/auth0/check_playbook_access.yaml": Need(
        NOETL, "NoETL's gateway callback API (gateway.gateway.svc.cluster.local)"),
    P + "api_integration/auth0/get_auth0_token.yaml": Need(CLOUD, "an Auth0 tenant"),
    P + "api_integration/auth0/provision_auth_schema.yaml": _local(
        "postgres only: creates the auth schema", basis=_NONE_STATED),
    P + "api_integration/auth0/setup_admin_permissions.yaml": Need(
        CLOUD, "grants roles to user 1, whom an Auth0 login creates (a foreign key)"),
    P + "api_integration/auth0/test_auth0_full_flow.yaml": Need(
        CLOUD, "Auth0 through its sub-playbooks"),
    P + "api_integration/auth0/user_management.yaml": Need(
        NOETL, "NoETL's gateway callback API (gateway.gateway.svc.cluster.local)"),
    P + "api_integration/github_metrics/github_metrics.yaml": Need(INTERNET, "api.github.com"),
    P + "api_integration/quantum_networking/quantum_networking_runner.yaml": Need(
        CLOUD, "Qiskit (not installed) or IBM Quantum's runtime API"),
    P + "atomic_item_context.yaml": _local("python only: loop items as context", basis=_NONE_STATED),
    P + "batch_execution/heavy_payload_pipeline_chunk_worker/heavy_payload_pipeline_chunk_worker.yaml": Need(
        INTERNET, "httpbin.org for item details"),
    P + "batch_execution/heavy_payload_pipeline_in_step/heavy_payload_pipeline_in_step.yaml": Need(
        INTERNET, "httpbin.org, through its chunk worker"),
    P + "batch_execution/heavy_payload_pipeline_in_step_parallel/heavy_payload_pipeline_in_step_parallel.yaml":
        Need(INTERNET, "httpbin.org, through its chunk worker"),
    P + "batch_execution/kind_playbook_lease_expiry/kind_playbook_lease_expiry.yaml": _local(
        "postgres and a catalog child in a loop; " + _SHORT, basis=_NONE_STATED,
        payload={"api_delay_seconds": 1, "item_delay_seconds": 0},
        setup=(P + "batch_execution/server_oom_stress_test_v2/server_oom_stress_test_v2.yaml",)),
    P + "batch_execution/kind_playbook_lease_expiry_worker/kind_playbook_lease_expiry_worker.yaml": _local(
        "postgres only (the child above); " + _SHORT, basis=_NONE_STATED,
        payload={"api_delay_seconds": 1, "item_delay_seconds": 0},
        setup=(P + "batch_execution/server_oom_stress_test_v2/server_oom_stress_test_v2.yaml",)),
    P + "batch_execution/frame_heartbeat_regression/frame_heartbeat_regression.yaml": Need(
        NOETL, "NoETL's runtime tables (`noetl.frame`, `noetl.stage`, `noetl.event`): it checks the frame "
               "heartbeats NoETL's cursor worker writes there"),
    P + "batch_execution/multi_playbook_batch/multi_playbook_batch.yaml": Need(
        INTERNET, "httpbin.org and open-meteo, and a GCS child"),
    P + "batch_execution/parallel_distributed_claim_regression/parallel_distributed_claim_regression.yaml":
        _local("postgres and a catalog child in a parallel loop; " + _SHORT, basis=_NONE_STATED,
               payload={"worker_delay_seconds": 1}),
    P + "batch_execution/parallel_distributed_claim_regression_worker/"
        "parallel_distributed_claim_regression_worker.yaml": _local(
        "postgres only (the child above); " + _SHORT, basis=_NONE_STATED, payload={"worker_delay_seconds": 1},
        setup=(P + "batch_execution/parallel_distributed_claim_regression/"
                   "parallel_distributed_claim_regression.yaml",)),
    P + "batch_execution/server_oom_stress_chunk_worker/server_oom_stress_chunk_worker.yaml": _local(
        "postgres only (a chunk worker)", basis=_NONE_STATED,
        setup=(P + "batch_execution/server_oom_stress_test/server_oom_stress_test.yaml",)),
    P + "batch_execution/server_oom_stress_chunk_worker_v2/server_oom_stress_chunk_worker_v2.yaml": _local(
        "postgres only (a chunk worker)", basis=_NONE_STATED,
        setup=(P + "batch_execution/server_oom_stress_test_v2/server_oom_stress_test_v2.yaml",)),
    P + "batch_execution/server_oom_stress_test/server_oom_stress_test.yaml": _local(
        "postgres and catalog children in a loop; 200 items instead of 3000", basis=_NONE_STATED,
        payload={"total_items": 200}),
    P + "batch_execution/server_oom_stress_test_v2/server_oom_stress_test_v2.yaml": _local(
        "postgres and catalog children in a loop; 200 items instead of 3000", basis=_NONE_STATED,
        payload={"total_items": 200}),
    P + "batch_execution/traveler_batch_enrichment_chunk_worker/traveler_batch_enrichment_chunk_worker.yaml":
        Need(INTERNET, "httpbin.org for traveler profiles"),
    P + "batch_execution/traveler_batch_enrichment_in_step/traveler_batch_enrichment_in_step.yaml": Need(
        INTERNET, "httpbin.org, through its chunk worker"),
    P + "cache_test/test_cache_simple.yaml": Need(CLOUD, "OpenAI's API"),
    P + "comprehensive_test.yaml": _local("python only: exclusive branches", basis=_NONE_STATED),
    P + "control_flow/weather_control_flow/weather_control_flow.yaml": Need(INTERNET, "api.open-meteo.com"),
    P + "control_flow_workbook/control_flow_workbook.yaml": _local("python and workbook tasks, fan-out"),
    P + "data_processing/wikipedia_processing/wikipedia_processing.yaml": Need(INTERNET, "en.wikipedia.org"),
    P + "data_transfer/http_iterator_save_postgres/http_iterator_save_postgres.yaml": Need(
        INTERNET, "api.open-meteo.com"),
    P + "data_transfer/http_to_postgres_direct/http_to_postgres_direct.yaml": Need(
        INTERNET, "jsonplaceholder.typicode.com"),
    P + "data_transfer/http_to_postgres_iterator/http_to_postgres_iterator.yaml": Need(
        INTERNET, "jsonplaceholder.typicode.com"),
    P + "data_transfer/http_to_postgres_simple/http_to_postgres_simple.yaml": Need(
        INTERNET, "jsonplaceholder.typicode.com"),
    P + "data_transfer/http_to_postgres_transfer/http_to_postgres_transfer.yaml": Need(
        INTERNET, "jsonplaceholder.typicode.com (run with a loopback stand-in: tests/workflow/test_transfer.py)"),
    P + "data_transfer/postgres_jsonb_test/postgres_jsonb_test.yaml": _local(
        "python and postgres: JSONB round trip", basis=_NONE_STATED),
    P + "deployment/docker_cleanup.yaml": Need(NOETL, "the Docker daemon of NoETL's development host"),
    P + "duckdb_gcs_workload_identity/duckdb_gcs_workload_identity.yaml": Need(
        CLOUD, "a GCS bucket through GCP workload identity"),
    P + "fanout_reduce/fanout_reduce_phase6.yaml": _local("python only: fan-out and reduce",
                                                          basis="in-file: COMPLETED"),
    P + "gui/widget_all_types/widget_all_types.yaml": _local("python only: widget payloads", basis=_NONE_STATED),
    P + "hello_world/hello_world.yaml": _local("python only"),
    P + "http_test.yaml": Need(NOETL, "the health endpoint of NoETL's server"),
    P + "interactive_brokers/ib_gateway_test.yaml": Need(CLOUD, "an Interactive Brokers gateway"),
    P + "interactive_brokers/ibkr_api.yaml": Need(CLOUD, "an Interactive Brokers gateway and NoETL's secrets"),
    P + "interactive_brokers/ibkr_gateway_maintain.yaml": Need(
        CLOUD, "an Interactive Brokers gateway and NoETL's `noetl.worker.secrets`"),
    P + "interactive_brokers/ibkr_gateway_verify.yaml": Need(
        CLOUD, "an Interactive Brokers gateway and NoETL's `noetl.worker.secrets`"),
    P + "interactive_brokers/ibkr_history.yaml": Need(CLOUD, "an Interactive Brokers gateway"),
    P + "iterator_save_test.yaml": Need(
        NOETL, "NoETL's default database: its postgres tasks name no connection (`auth`)"),
    P + "iterator_save_test/iterator_save_test.yaml": _local("postgres in a loop", basis=_NONE_STATED),
    P + "json_serialization_save.yaml": _local("python and postgres: JSON values saved", basis=_NONE_STATED),
    P + "json_serialization_save/json_serialization_save.yaml": _local(
        "python and postgres: JSON values saved", basis=_NONE_STATED),
    P + "keychain/google_id_token/google_id_token_comparison_test.yaml": Need(CLOUD, "Google ID tokens (GCP)"),
    P + "keychain/google_id_token/google_id_token_test.yaml": Need(CLOUD, "Google ID tokens (GCP)"),
    P + "load_test/reference_chain_loop_stress/reference_chain_loop_stress.yaml": _local(
        "python and http on the reference-chain items of the paginated stand-in (from NoETL's server): 382 "
        "records in 16 pages, each page's records a parallel loop; its progress step reads NoETL's loop summary "
        "`stats.total`/`stats.failed` (NoETL's `get_loop_aggregation`; behaviour `loop-stats`, docs/semantics.md)",
        basis=_NONE_STATED),
    P + "load_test/heavy_loop_aggregation/heavy_loop_aggregation.yaml": _local(
        "python only: a 100-item loop", basis="in-file: 100 of 100 processed"),
    P + "load_test/state_report_synthetic_load/state_report_synthetic_load.yaml": _local(
        "python, postgres and chunk-worker sub-playbooks from the catalog (a templated `max_in_flight`)",
        basis=_NONE_STATED, payload={"total_items": 60, "batch_size": 30}),
    P + "load_test/state_report_synthetic_load/state_report_synthetic_load_worker.yaml": _local(
        "postgres only (a chunk worker), on the table its parent creates", basis=_NONE_STATED,
        setup=(P + "load_test/state_report_synthetic_load/state_report_synthetic_load.yaml",)),
    P + "oauth/google_gcs/google_gcs_oauth.yaml": Need(CLOUD, "GCS with Google OAuth"),
    P + "oauth/google_secret_manager/google_secret_manager.yaml": Need(CLOUD, "GCP Secret Manager"),
    P + "ops/execution_ai_analyze/execution_ai_analyze.yaml": Need(CLOUD, "OpenAI's API, GCP secrets"),
    P + "ops/playbook_ai_explain/playbook_ai_explain.yaml": Need(CLOUD, "OpenAI's API, GCP secrets"),
    P + "ops/playbook_ai_generate/playbook_ai_generate.yaml": Need(CLOUD, "OpenAI's API, GCP secrets"),
    P + "pagination/basic/test_pagination_basic.yaml": _local(
        "http on the paginated stand-in: parallel probes overlap"),
    P + "pagination/cursor/test_pagination_cursor.yaml": _local("http on the paginated stand-in: cursor paging"),
    P + "pagination/loop_with_pagination/test_loop_with_pagination.yaml": _local(
        "http on the paginated stand-in and postgres; its SQL writes `{{ execution_id }}` unquoted into a BIGINT "
        "column, given the execution's number (NTL323); its check step reads "
        "`{{ validate_results.data.command_0.rows }}`, NoETL's step envelope `data`, and its routing "
        "`{{ fetch_page.results.check_pagination.has_more }}`, a task list's results by task name, both read as "
        "NoETL does (docs/semantics.md)", basis=_NONE_STATED),
    P + "pagination/fetch_load_test/test_fetch_load.yaml": _local(
        "http on the paginated stand-in's FHIR-like patient records (a parallel loop paging each patient with "
        "jump), postgres; 20 patients instead of 500, without the API's 2-4 s delays", basis=_NONE_STATED,
        payload={"patients": [f"P-{i:04d}" for i in range(1, 21)], "num_patients": 20, "api_min_delay": 0,
                 "api_max_delay": 0, "api_payload_kb": 1},
        differs="its page policy reads `output.data.meta`, undefined in NoETL too: there, as here, a task's "
                "`output.data` is the http tool's result, whose response body is `output.data.data` (noetl/noetl@"
                "3badb77a noetl/worker/task_sequence_executor.py `build_outcome` over the worker's http result "
                "`{status_code, headers, url, elapsed, data}`; noetl/tools src/tools/http.rs "
                "`build_response_data`: `{status_code, headers, data, body}`, read as `output.data.data.*`). "
                "NoETL completes it without paging: its templates chain undefined values (minijinja "
                "`UndefinedBehavior::Chainable`, noetl/tools src/template/engine.rs; NoETL's Python worker keeps a "
                "failed `set` template's text), so `iter.has_more` is never true, each patient is read one page and "
                "its `records_fetched` counts 0 (`length` of undefined), and the check counts patients only. Here "
                "an attribute of an undefined value is an error (docs/semantics.md, \"Templates\"), so the "
                "rule's `set` fails the task: read `output.data.data.meta` and it completes, paging each patient",
        fails_with="'dict object' has no attribute 'meta'"),
    P + "pagination/max_iterations/test_pagination_max_iterations.yaml": _local(
        "http on the paginated stand-in: a page limit"),
    P + "pagination/offset/test_pagination_offset.yaml": _local("http on the paginated stand-in: offset paging"),
    P + "pagination/pipeline/test_pagination_pipeline.yaml": Need(
        NOETL, "NoETL's default database: a postgres task names no connection (`auth`), and psycopg2"),
    P + "pagination/pipeline/test_pipeline_error_handling.yaml": _local(
        "http on the paginated stand-in: retry, rate limits, skip, fail", FAILED,
        "none stated: its last test step fails on a 401 that no arc handles, so the run fails "
        "(docs/semantics.md, tests/workflow/test_corpus_http.py)"),
    P + "pagination/pipeline/test_pipeline_heavy_payload.yaml": _local(
        "http on the paginated stand-in: large pages", basis=_NONE_STATED),
    P + "pagination/pipeline/test_pipeline_simple.yaml": _local(
        "http on the paginated stand-in: a task pipeline", basis="in-file: 5 items, ids 1..5"),
    P + "pagination/pipeline_v2/test_pagination_pipeline_v2.yaml": Need(
        NOETL, "NoETL's default database: a postgres task names no connection (`auth`), and psycopg2"),
    P + "pagination/retry/test_pagination_retry.yaml": _local("http on the paginated stand-in: retry on 500"),
    P + "patient_batch_parallel_queue/patient_batch_parallel_queue.yaml": _local(
        "postgres and http on the patient demographics endpoint of the paginated stand-in: a producer pages "
        "1,000 patients into a queue that parallel loop iterations claim (FOR UPDATE SKIP LOCKED)",
        basis=_NONE_STATED),
    P + "pft_flow_test/pft_queue_db_maintenance.yaml": Need(
        NOETL, "NoETL's demo database in its cluster (postgres.postgres.svc.cluster.local)"),
    P + "pft_flow_test/test_pft_flow_v2.yaml": _local(
        "postgres and http on the patient and MDS endpoints of the paginated stand-in: postgres cursor loops "
        "drain per-facility work queues, one record a request; scaled to 2 facilities of 5 patients (NoETL's "
        "10 of 1,000 is 100,000 requests), its own checks unchanged", basis=_NONE_STATED,
        payload={"num_facilities": 2, "patients_per_facility": 5}),
    P + "pft_flow_test/test_pft_page_continuation.yaml": _local(
        "postgres and http on the patient endpoints of the paginated stand-in (one record a page, "
        "`paging.hasMore`): a postgres cursor loop drains a work table that its own rows refill with each "
        "next page", basis=_NONE_STATED),
    P + "pft_flow_test/test_mds_batch_worker.yaml": _local(
        "postgres and http on the MDS endpoint of the paginated stand-in: a parallel loop over one slice of "
        "the MDS work table that test_pft_flow_v2 (run first) fills, facility 2's", basis=_NONE_STATED,
        payload={"facility_mapping_id": 2}, setup=(P + "pft_flow_test/test_pft_flow_v2.yaml",)),
    P + "pft_flow_test/test_pft_flow.yaml": _local(
        "postgres and http on the PFT batch endpoint of the paginated stand-in (`/api/v1/pft/batch/<type>`, "
        "from NoETL's server, which marks it benchmark-only yet serves it at the commit copied): 16 parallel "
        "slots claim bounded batches of patients (FOR UPDATE SKIP LOCKED) and jump back until the queue drains; "
        "scaled to 1 facility of 1,000 patients (NoETL's 10; its patient ids are `(facility - 1) * 1000 + n`, so "
        "the server's facility of a patient is right only with `patients_per_facility` 1000) and one record a page "
        "(NoETL's 10, so each batch response stays under the 64 KiB inline budget), its own checks unchanged. "
        "With 10 records a page a batch response (about 180 KB) is stored by reference, which keeps at most "
        "64 KiB of the fields templates read (docs/tools.md, \"Large results\"): the rows its rule's `set` reads "
        "(`output.data.data.rows`) are more, so they read as undefined (with a warning) and its save fails "
        "(`jsonb_to_recordset` on a non-array)",
        basis=_NONE_STATED,
        payload={"num_facilities": 1, "page_size": 1}),
    P + "playbook_composition/playbook_composition.yaml": _local(
        "python, postgres and a catalog sub-playbook in a loop; its last step reads "
        "`{{ validate_results.data }}`, NoETL's step envelope `data`, read as NoETL does (docs/semantics.md)"),
    P + "playbook_composition/user_profile_scorer.yaml": _local("python and workbook tasks"),
    P + "postgres_excel_gcs_test/postgres_excel_gcs_test.yaml": Need(CLOUD, "a GCS bucket with HMAC keys"),
    P + "python_psycopg/http_to_postgres_bulk/http_to_postgres_bulk_python.yaml": Need(
        INTERNET, "jsonplaceholder.typicode.com, and NoETL's demo database in its cluster"),
    P + "quantum_cudaq/quantum_cudaq.yaml": _local(
        "python, postgres and http, each with its own fallback: CUDA-Q is not installed (its simulation falls back "
        "to synthetic counts, as the playbook provides), its problem catalog and result endpoints "
        "(*.example.com) do not resolve and its rules continue; requires feature `ai_meta`, which NoETL does not "
        "check (NTL340). Its postgres insert reads `{{ ai_analysis.data.aggregates.runs }}`, NoETL's step envelope "
        "`data`, read as NoETL does (docs/semantics.md), so its rule notes 'Postgres persistence succeeded'",
        basis=_NONE_STATED),
    P + "regression_test/create_test_schema.yaml": _local("postgres only: creates a schema", basis=_NONE_STATED),
    P + "retry_test/duckdb_retry_query.yaml": _local("duckdb with a retry policy"),
    P + "retry_test/http_retry_status_code.yaml": Need(INTERNET, "httpbin.org"),
    P + "retry_test/http_retry_with_stop.yaml": Need(INTERNET, "httpbin.org"),
    P + "retry_test/postgres_retry_connection.yaml": _local("postgres with a retry policy"),
    P + "retry_test/python_retry_exception.yaml": _local(
        "python with a retry policy on random exceptions",
        basis="cfg; random by design: all 5 attempts fail about once in 6 runs, then FAILED is right"),
    P + "retry_test/retry_simple_config.yaml": _local("http on the paginated stand-in: retry rules"),
    P + "root_scripts/test_implicit_end_routing.yaml": _local("python only", basis=_NONE_STATED),
    P + "root_scripts/test_keychain.yaml": _local(
        "python only: declares keychain entries no task reads, so none is resolved", basis=_NONE_STATED),
    P + "root_scripts/test_script_loading.yaml": _local(
        "python with NoETL's inline `script:` (`source: {type: inline, code: ...}`); its start step, the script "
        "loading, completes; its end step reads `{{ result }}`, which names nothing this playbook defines (NTL702 "
        "warns), so its `result.get('status')` raises", FAILED,
        "NoETL's too: no runtime of NoETL defines `result` for a template, neither the previous step's result nor "
        "the current one's (noetl/noetl@3badb77a `ExecutionState.get_render_context`; noetl/server "
        "orchestrate-core/src/state.rs `build_context`: workload, step results by step name, `ctx`, execution "
        "ids), so it renders undefined there too (an empty text in NoETL's Python engine, null in its Rust one) "
        "and the same line raises",
        fails_with="AttributeError: 'NoneType' object has no attribute 'get'"),
    P + "root_scripts/test_simple_loop.yaml": _local("python only: a loop", basis=_NONE_STATED),
    P + "save_storage_test/create_tables.yaml": _local("postgres only: creates the save-test tables",
                                                       basis=_NONE_STATED),
    P + "save_storage_test/save_all_storage_types.yaml": _local(
        "python, postgres and duckdb; its code reads NoETL's `context` by name, given as input (NTL321)",
        setup=(P + "save_storage_test/create_tables.yaml",)),
    P + "save_storage_test/save_delegation_test.yaml": Need(INTERNET, "httpbin.org"),
    P + "script_execution/postgres_file_example.yaml": _local(
        "postgres with its SQL from a file (`script:`); the file is not in NoETL's set: a stand-in of ours",
        payload={"script_path": _SCRIPTS + "create_test_table.sql"}),
    P + "script_execution/postgres_s3_example.yaml": Need(
        CLOUD, "an AWS S3 bucket (noetl-sql-scripts) and AWS credentials for its SQL (`script:` from s3, which "
               "runs here on a local S3 server: tests/tools)"),
    P + "script_execution/python_file_example.yaml": _local(
        "python with its code from a file (`script:`); the file is not in NoETL's set: a stand-in of ours; its "
        "verify step reads `{{ run_python_from_file.data }}`, NoETL's step envelope `data`, read as NoETL does "
        "(docs/semantics.md)",
        payload={"script_path": _SCRIPTS + "hello_world.py"}),
    P + "script_execution/python_http_example.yaml": Need(
        INTERNET, "raw.githubusercontent.com for its code (`script:` over http, which runs here: tests/tools)"),
    P + "save_storage_test/save_edge_cases.yaml": _local(
        "python, postgres and duckdb", setup=(P + "save_storage_test/create_tables.yaml",)),
    P + "save_storage_test/save_simple_test.yaml": _local(
        "python, postgres and a catalog sub-playbook", setup=(P + "save_storage_test/create_tables.yaml",)),
    P + "simple_python.yaml": _local("python only", basis=_NONE_STATED),
    P + "test_args_passing.yaml": _local("python only: arc set and `input_data`", basis="in-file: sum 300"),
    P + "test_end_with_action.yaml": _local("python only"),
    P + "test_gke_lifecycle/test_gke_lifecycle.yaml": Need(CLOUD, "Google Kubernetes Engine"),
    P + "test_large_result_extraction.yaml": _local(
        "python only: a 117 KB result with a step `output:` block, over NoETL's 64 KiB budget, so stored; its "
        "`output_select` fields and `_ref` read by the next step", basis=_NONE_STATED),
    P + "test_large_tabular_result.yaml": _local("python only: a large row set", basis=_NONE_STATED),
    P + "test_output_select.yaml": _local(
        "python and artifact: a 257 KB result stored by its step `output:` block, its `output_select` fields "
        "read, and read back whole with `artifact get` (`{{ lazy_load_full_data.data }}`)", basis=_NONE_STATED),
    P + "test_storage_tiers.yaml": _local(
        "python and artifact: four results from 5 KB to 15 MB with step `output:` blocks, read back with "
        "`artifact get`; NoETL's in-playbook verdict reads `_store` `kv` for the 117 KB one, which is `disk` "
        "here (files); its own `test_result` says FAILED, as NoETL's does, since its `load_*.count` reads find "
        "the body under `data`: the run completes", basis=_NONE_STATED),
    P + "test_loop_instance_isolation/playbook.yaml": _local(
        "python only: two loops", basis="in-file: 2 results per loop"),
    P + "test_nats_kv.yaml": _local("nats only: key-value put, get and delete in the `sessions` bucket",
                                   basis=_NONE_STATED),
    P + "test_oversize_command_context.yaml": _local("python only: a large context", basis=_NONE_STATED),
    P + "test_resolve_by_urn.yaml": _local(
        "python only: a result over the inline budget read by a later step (`{{ start.rows | length }}`, "
        "`{{ start.rows[1100][0] }}`: the stored result keeps what its templates read)", basis=_NONE_STATED),
    P + "test_side_effect_barrier.yaml": Need(
        NOETL, "the fake GCS server of NoETL's cluster (fake-gcs-server.noetl.svc.cluster.local)"),
    P + "test_start_with_action.yaml": _local("python only"),
    P + "tradedb/tradedb_bootstrap.yaml": _local(
        "postgres only: creates TradeDB tables", basis=_NONE_STATED),
    P + "tradedb/tradedb_create_db.yaml": _local("postgres only (its SQL file is absent: the run checks the "
                                                 "connection)", basis=_NONE_STATED),
    P + "tutorials/internet_postgres_gcs/internet_postgres_gcs_hmac.yaml": Need(
        CLOUD, "api.github.com and a GCS bucket with HMAC keys"),
    P + "tutorials/internet_postgres_gcs/internet_postgres_gcs_workload_identity.yaml": Need(
        CLOUD, "api.github.com and a GCS bucket through workload identity"),
    P + "v10_canonical_example.yaml": Need(INTERNET, "api.example.com (illustrative; does not resolve)"),
    P + "vars_test/test_transient.yaml": _local("python only: transient vars"),
    P + "vars_test/test_vars_api.yaml": _local("python only: vars"),
    P + "vars_test/test_vars_block.yaml": _local("python only: a vars block"),
    P + "vars_test/test_vars_simple.yaml": _local("python only: vars"),
    P + "vars_test/test_vars_template_access.yaml": _local(
        "python only: vars in templates; its code reads NoETL's `context` by name, given as input (NTL321)"),
    "fixtures/subscription/handle_webhook.yaml": _local("python only: a webhook handler", basis=_NONE_STATED),
    "fixtures/subscription/handle_webhook_priority.yaml": _local("python only: a webhook handler",
                                                                 basis=_NONE_STATED),
    "fixtures/subscription/sub_ingest_default.yaml": _local("python only: a subscription handler",
                                                            basis=_NONE_STATED),
    "fixtures/subscription/sub_ingest_priority.yaml": _local("python only: a subscription handler",
                                                             basis=_NONE_STATED),
}


#: the keychain entries the runnable fixtures name (`auth:`, or a workload value it renders)
KEYCHAIN = ("pg_auth", "pg_k8s", "pg_local", "pg_trade")
#: the NATS keychain entries they name, and the key-value buckets NoETL's deployment has
NATS_KEYCHAIN = ("nats_credential",)
NATS_BUCKETS = ("sessions",)


def noetl_validation(path: str) -> dict[str, Any] | None:
    """The ``validation`` block NoETL's regression runner has for ``path``, if it runs it."""
    return validations().get(path)


def validations() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    return {f"{e['path']}.yaml": e.get("validation") or {} for e in config["playbooks"]}


def valid_files() -> list[str]:
    return [f.path for f in fates() if f.valid]


def runnable() -> list[str]:
    return sorted(path for path, need in NEEDS.items() if need.needs == LOCAL)


def markdown() -> str:
    expected = expected_by_noetl()
    by_kind: dict[str, int] = {}
    for need in NEEDS.values():
        by_kind[need.needs] = by_kind.get(need.needs, 0) + 1
    local = runnable()
    differ = [p for p in local if NEEDS[p].differs]
    lines = [
        "# NoETL's e2e fixtures: which ones run here",
        "",
        "Every playbook of NoETL's fixture set that validates (docs/noetl-e2e-fates.md) and what it",
        "needs to run. The ones that need only local services run end to end on the Temporal dev",
        "server in `tests/workflow/test_e2e_runs.py`, one test per file, with the payload and setup",
        "below and the outcome in the `expect` column: the execution state NoETL's regression",
        "runner expects (`fixtures/playbook_test_config.yaml`, with the steps and values it lists),",
        "else what the playbook itself asserts, else what a correct run does.",
        "",
        "This page is generated (`python -m tests.dsl.e2e_needs > docs/noetl-e2e-runs.md`) from",
        "the table in `tests/dsl/e2e_needs.py`; `tests/dsl/test_e2e_needs.py` keeps them equal.",
        "",
        "What the kinds mean:",
        "",
    ]
    lines += [f"- **{kind}** ({by_kind.get(kind, 0)} files): {text}" for kind, text in KINDS.items()]
    lines += [
        "",
        f"**{len(local)} files run here**; {len(local) - len(differ)} end as expected and "
        f"{len(differ)} {'differs' if len(differ) == 1 else 'differ'} on purpose: the reason is in the table, and their tests check that the "
        "run fails with the error recorded there (then report an expected failure), so any change "
        "is noticed.",
        "",
        "The files refused at validation are not in this table: docs/noetl-e2e-fates.md says for each what NoETL's",
        "own runtime does with it and whether it could run here. Refused although NoETL runs it and it could run "
        f"here: {len(refused_though_noetl_runs_it_here())} (work in progress, listed there).",
        "",
        "Credentials: each keychain name the fixtures use (" + ", ".join(f"`{k}`" for k in KEYCHAIN) + ")",
        "resolves through `NOETL_KEYCHAIN_<NAME>` (docs/keychain.md) to a database the test creates on",
        "the test server for the fixtures' tables and drops afterwards. The paginated",
        "test server is `tests/support/paginated_api.py` on loopback, given to the playbooks as `api_url`.",
        "Sub-playbooks are registered in a catalog (`NOETL_CATALOG_PATH`) under their `metadata.path`, as",
        "NoETL registers them.",
        "",
        "| file | needs | reason | expect | basis | payload, setup | differs here | NoETL cfg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(NEEDS):
        need = NEEDS[path]
        extra = ", ".join(f"`{k}: {v}`" for k, v in need.payload.items())
        if need.setup:
            extra += ("; " if extra else "") + "after " + ", ".join(
                f"`{s.removeprefix(P)}`" for s in need.setup)
        cells = [f"`{path.removeprefix('fixtures/')}`", need.needs, need.reason, need.expect, need.basis, extra,
                 need.differs, expected.get(path, "")]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
