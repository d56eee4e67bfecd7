"""Corpus playbooks that talk to NoETL's paginated test server, run end to end on the dev
server against our loopback stand-in (``tests.support.paginated_api``, written from the
contract in the corpus INDEX.md).

Each playbook gets a fresh server (the flaky and rate-limit counters are server-global)
and ``api_url`` pointing at it through the request payload. The playbooks carry their own
checks in python steps; the tests assert the execution state the INDEX's Expected column
states (or, where it states none, what a correct runtime does) plus the key results.

These playbooks found one dialect difference, now followed: a task's own plain-name
``set:`` (``fetch_result: "{{ output }}"``) binds ``output`` to the task's *result*, as
NoETL's task sequences do (docs/dialect-aliases.md).
"""

from __future__ import annotations

import pytest

from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook
from tests.support.paginated_api import PaginatedAPIServer

from ..conftest import CORPUS

pytestmark = pytest.mark.temporal



@pytest.fixture
def paginated_api():
    with PaginatedAPIServer() as api:
        yield api


async def run(temporal, task_queue, api, name):
    path = CORPUS / f"{name}.yaml"
    return await run_with_client(temporal.client, load_playbook(path).playbook, task_queue=task_queue,
                                 source=str(path), payload={"api_url": api.base_url}, execution_timeout_s=120)


def of(report, event_type, entity=None):
    return [e for e in report.events if e["event_type"] == event_type
            and (entity is None or e["entity_id"] == entity)]


def started(report):
    return [e["entity_id"] for e in of(report, "step.started")]


def result(report, step):
    return report.steps[step]["result"]


# ----------------------------------------------------------------------------- passing


async def test_pagination_offset_collects_all_35_users(temporal, task_queue, paginated_api):
    report = await run(temporal, task_queue, paginated_api, "e2e_pagination_offset")
    assert report.state == "COMPLETED", report.error  # INDEX: cfg completed
    # in-file: validate_results checks 35 users (it reports 'failed' rather than raising)
    assert result(report, "validate_results") == {"status": "success", "total_users": 35,
                                                  "first_id": 1, "last_id": 35}
    assert started(report).count("fetch_page") == 4  # offsets 0, 10, 20, 30
    assert paginated_api.hits("/api/v1/users") == 4
    assert report.ctx["offset"] == 40 and report.ctx["has_more"] is False


async def test_pagination_cursor_collects_all_35_events(temporal, task_queue, paginated_api):
    report = await run(temporal, task_queue, paginated_api, "e2e_pagination_cursor")
    assert report.state == "COMPLETED", report.error  # INDEX: cfg completed
    assert result(report, "validate_results") == {"status": "success", "total_events": 35,
                                                  "first_id": 1, "last_id": 35}
    ids = [e["id"] for e in result(report, "check_pagination")["collected_events"]]
    assert ids == list(range(1, 36))
    # the terminal page's `next_cursor: null` arrives as None (noetl/ai-meta#89 in the playbook)
    assert result(report, "fetch_page")["body"]["next_cursor"] is None
    assert paginated_api.hits("/api/v1/events") == 4


async def test_retry_simple_config_retries_the_first_500(temporal, task_queue, paginated_api):
    report = await run(temporal, task_queue, paginated_api, "e2e_retry_simple_config")
    assert report.state == "COMPLETED", report.error  # INDEX: cfg completed
    assert started(report) == ["start", "boolean_retry", "integer_retry", "full_config_retry", "end"]
    # fail_on=1 fails only the first request for page 1 (server-global counter): the first step
    # retries once, the two later steps succeed at once.
    failed = of(report, "task.attempt.failed")
    assert [(e["entity_id"], e["attempt"], e["payload"]["error"]["code"]) for e in failed] == [
        ("boolean_retry_task", 1, 500)]
    assert failed[0]["payload"]["meta"]["action"] == "retry"
    assert [e["attempt"] for e in of(report, "task.attempt.done", "boolean_retry_task")] == [2]
    assert paginated_api.hits("/api/v1/flaky") == 4
    for step in ("boolean_retry", "integer_retry", "full_config_retry"):
        body = result(report, step)["data"]
        assert [i["id"] for i in body["data"]] == list(range(1, 11)) and body["paging"]["hasMore"] is True


async def test_pipeline_error_handling_policies(temporal, task_queue, paginated_api):
    """The INDEX states no expectation. The playbook's last test step is "fail on auth errors":
    `fetch_auth_error` gets a 401 and its policy says `do: fail`, so `test_fail_auth` fails and
    `should_not_reach` never runs. Its only arc has no `when`, so the flow goes on to
    generate_report and end, but an unconditional arc does not *handle* the failure
    (docs/semantics.md, "Completion and final status"): a correct run ends FAILED, with that one
    unhandled failure of kind `auth` and every earlier test step completed."""
    report = await run(temporal, task_queue, paginated_api, "e2e_pipeline_error_handling")
    assert report.state == "FAILED"
    failures = report.summary["failed_steps"]
    assert [(f["step"], f["kind"], f["handled"]) for f in failures] == [("test_fail_auth", "auth", False)]
    assert report.summary["unhandled_failures"] == 1
    assert started(report) == ["start", "test_retry_transient", "test_rate_limit", "test_skip_transform",
                               "test_fail_auth", "generate_report", "end"]
    assert of(report, "task.started", "should_not_reach") == []
    # retry on 500: the flaky counters were reset by the pipeline, page 1 fails once, then succeeds
    assert [(e["attempt"], e["payload"]["error"]["kind"]) for e in
            of(report, "task.attempt.failed", "fetch_flaky")] == [(1, "server_error")]
    assert result(report, "test_retry_transient")["status"] == "passed"
    # rate limit: each page gets one 429 (Retry-After: 1); the rule's delay (2 s) is longer, so it wins
    for task in ("fetch_1", "fetch_2"):
        failed = of(report, "task.attempt.failed", task)
        assert [(e["attempt"], e["payload"]["error"]["kind"]) for e in failed] == [(1, "rate_limit")]
        assert failed[0]["payload"]["error"]["retry_after"] == 1.0
        assert failed[0]["payload"]["meta"]["next_delay_s"] == 2.0
    assert paginated_api.hits("/api/v1/rate-limited") == 4
    assert result(report, "test_rate_limit")["status"] == "passed"
    # skip pattern: the python error is continued past, the step completes
    assert [e["payload"]["error"]["code"] for e in of(report, "task.attempt.failed", "transform_bad")] == [
        "KeyError"]
    assert report.steps["test_skip_transform"]["status"] == "COMPLETED"
    assert result(report, "test_skip_transform")["skipped"] is True
    # auth: one request, no retry
    assert paginated_api.hits("/api/v1/errors") == 1
    assert report.steps["generate_report"]["status"] == "COMPLETED"


# ------------------------------------------------------------------ noetl-temporal bug


async def test_pipeline_error_handling_item_counts(temporal, task_queue, paginated_api):
    """The validate tasks count `http_response['data']['data']`: page 1 holds 10 items."""
    report = await run(temporal, task_queue, paginated_api, "e2e_pipeline_error_handling")
    assert result(report, "test_retry_transient")["items_received"] == 10
    assert result(report, "test_rate_limit")["items_received"] == 10


async def test_pagination_max_iterations_stops_after_two_pages(temporal, task_queue, paginated_api):
    report = await run(temporal, task_queue, paginated_api, "e2e_pagination_max_iterations")
    assert report.state == "COMPLETED", report.error  # INDEX: cfg completed; in-file asserts 20 items
    assert result(report, "validate_results") == {"status": "success", "total_items": 20,
                                                  "max_iterations_worked": True}
    assert started(report).count("fetch_with_limit") == 2
    assert paginated_api.hits("/api/v1/assessments") == 2


async def test_pagination_retry_gets_all_35_items_despite_a_500_on_page_2(temporal, task_queue,
                                                                          paginated_api):
    report = await run(temporal, task_queue, paginated_api, "e2e_pagination_retry")
    assert report.state == "COMPLETED", report.error  # INDEX: cfg completed; in-file asserts 35 items
    assert result(report, "validate_results") == {"status": "success", "total_items": 35, "retry_worked": True}
    failed = of(report, "task.attempt.failed", "fetch")
    assert [(e["attempt"], e["payload"]["error"]["code"]) for e in failed] == [(1, 500)]
    assert paginated_api.hits("/api/v1/flaky") == 5  # 4 pages + 1 retry of page 2


async def test_pipeline_simple_fetch_transform_validate(temporal, task_queue, paginated_api):
    report = await run(temporal, task_queue, paginated_api, "e2e_pipeline_simple")
    assert report.state == "COMPLETED", report.error  # in-file: validate asserts count == 5, ids [1..5]
    assert result(report, "run_pipeline") == {"status": "passed", "message": "Task sequence executed successfully",
                                              "items_processed": 5}
    assert result(report, "report_result")["status"] == "passed"
    assert paginated_api.hits("/api/v1/assessments") == 1


# ----------------------------------------------------------------------------- the stand-in itself


def _get(api: PaginatedAPIServer, path: str) -> tuple[int, dict, dict]:
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(api.base_url + path, timeout=10) as answer:  # noqa: S310 - loopback
            return answer.status, json.loads(answer.read()), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), dict(exc.headers)


def test_the_patient_endpoints_answer_one_record_a_page_as_noetl_s_server(paginated_api):
    """The PFT fixtures' contract (tests/support/pft_patients.py, from NoETL's own server): a page
    count fixed per patient and type, one record a page, ``hasMore`` until the last, 404 past it."""
    from tests.support.pft_patients import page_count

    for kind, (low, high) in {"assessments": (2, 4), "conditions": (1, 3), "medications": (2, 3),
                              "vital_signs": (1, 1)}.items():
        total = page_count("7", kind)
        assert low <= total <= high
        pages = [_get(paginated_api, f"/api/v1/patient/{kind}?patientId=7&page={p}&pageSize=1")
                 for p in range(1, total + 2)]
        assert [status for status, _, _ in pages] == [200] * total + [404]
        assert [body["paging"]["hasMore"] for _, body, _ in pages[:-1]] == [True] * (total - 1) + [False]
        assert all(len(body["data"]) == 1 and body["paging"]["total"] == total for _, body, _ in pages[:-1])
    # NoETL's records, byte for byte: md5("7:assessments:1") decides value and MDS ids
    status, body, _ = _get(paginated_api, "/api/v1/patient/assessments?patientId=7&page=1")
    assert body["data"][0]["id"] == "ASSE-7-p1-i0" and body["data"][0]["mdsCount"] == len(
        body["data"][0]["mdsAssessmentIds"])
    status, body, _ = _get(paginated_api, "/api/v1/patient/demographics?patientId=7")
    assert status == 200 and body["patientId"] == "7" and body["status"] == "active"
    status, body, _ = _get(paginated_api, "/api/v1/pft/mds/details?assessmentId=MDS-7-001")
    assert status == 200 and body["rowCount"] == 1 and body["rows"][0]["assessment_id"] == "MDS-7-001"
    assert _get(paginated_api, "/api/v1/pft/mds/details?assessmentId=A,B")[0] == 400
    status, detail, _ = _get(paginated_api, "/api/v1/mds/assessment/MDS-7-001")
    assert status == 200 and detail == body["rows"][0]["payload"]   # the same detail, unwrapped


def test_the_patient_endpoints_refuse_past_their_rate_with_retry_after(paginated_api):
    from tests.support.pft_patients import RATE_LIMIT, RateLimit

    now = [0.0]
    paginated_api._server.pft_rate = RateLimit(clock=lambda: now[0])  # a clock that stands still
    answers = [_get(paginated_api, "/api/v1/patient/demographics?patientId=1") for _ in range(RATE_LIMIT + 1)]
    assert [status for status, _, _ in answers] == [200] * RATE_LIMIT + [429]
    assert answers[-1][2]["Retry-After"] == "1"
    now[0] = 1.0   # a second later the window has room again
    assert _get(paginated_api, "/api/v1/patient/demographics?patientId=1")[0] == 200


def test_the_patient_records_answer_noetl_s_fhir_bundle(paginated_api):
    """``/api/v1/patient-records`` as NoETL's server answers it (tests/support/noetl_load_api.py):
    2 to 5 pages fixed per patient (md5 of its id), ``meta`` and the ``next`` link until the
    last page, 404 past it, and 429 past its ``rate_limit``."""
    from tests.support.noetl_load_api import records_page_count

    total = records_page_count("P-0001")
    assert 2 <= total <= 5
    query = "/api/v1/patient-records?patientId=P-0001&pageSize=3&min_delay=0&max_delay=0&payload_kb=1&page="
    pages = [_get(paginated_api, query + str(p)) for p in range(1, total + 2)]
    assert [status for status, _, _ in pages] == [200] * total + [404]
    assert [body["meta"]["page"] for _, body, _ in pages[:-1]] == list(range(1, total + 1))
    assert all(body["meta"]["totalPages"] == total and len(body["entry"]) == 3 for _, body, _ in pages[:-1])
    assert [[link["relation"] for link in body["link"]] for _, body, _ in pages[:-1]] == (
        [["self", "next"]] * (total - 1) + [["self"]])
    assert pages[0][1]["entry"][0]["resource"]["id"] == "P-0001-p1-e0"
    answers = [_get(paginated_api, query + "1&rate_limit=2") for _ in range(3)]
    assert [status for status, _, _ in answers][-1] == 429 and answers[-1][2]["Retry-After"] == "1"


def test_the_reference_chain_items_answer_bounded_linked_refs(paginated_api):
    """``/api/v1/reference-chain/items`` as NoETL's server answers it: ``total`` records in pages,
    ``hasMore`` until the last, and in ``linked`` mode a chain of at most two page refs."""
    query = "/api/v1/reference-chain/items?pageSize=25&total=60&payload_kb=0&ref_mode=linked&page="
    pages = [_get(paginated_api, query + str(p))[1] for p in (1, 2, 3)]
    assert [len(body["data"]) for body in pages] == [25, 25, 10]
    assert [body["paging"]["hasMore"] for body in pages] == [True, True, False]
    assert [body["refs"]["chain"] for body in pages] == [
        ["page-000001"], ["page-000001", "page-000002"], ["page-000002", "page-000003"]]
    assert pages[2]["data"][-1]["record_ref"] == "record-000060"
    expanded = _get(paginated_api, query.replace("linked", "expanded") + "3")[1]
    assert expanded["refs"]["chain_length"] == 3
