"""Every NoETL e2e fixture that needs only local services runs end to end on the dev server.

Which files those are, and the outcome each must end with, is the table of
``tests/dsl/e2e_needs.py`` (docs/noetl-e2e-runs.md). The local stand-ins: a database of
the test PostgreSQL, created for these runs and dropped after, under each keychain name the
fixtures use (``NOETL_KEYCHAIN_<NAME>``); the test NATS server (its buckets created) under
the NATS keychain names; the loopback paginated test server as
``api_url``; a catalog holding every valid fixture under its ``metadata.path``, where
``kind: playbook`` finds the sub-playbooks. A fixture the
table says differs here on purpose must fail with the error the table records (then it is
reported as an expected failure); any other outcome fails the test, so the table must change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from noetl_temporal.client.end_to_end import RunReport, run_with_client
from noetl_temporal.dsl import load_playbook
from noetl_temporal.errors import PlaybookInvalid
from tests.dsl.e2e_fates import E2E
from tests.dsl.e2e_needs import (
    KEYCHAIN,
    NATS_BUCKETS,
    NATS_KEYCHAIN,
    NEEDS,
    P,
    noetl_validation,
    runnable,
    valid_files,
)
from tests.support import nats_server
from tests.support.paginated_api import PaginatedAPIServer
from tests.support.postgres import execute, fields, require_dsn, unique_name

pytestmark = pytest.mark.temporal

RUN_TIMEOUT_S = 180
#: random by design: each attempt raises with some probability, so all 5 may fail
RANDOM = P + "retry_test/python_retry_exception.yaml"


@pytest.fixture(scope="module")
def e2e_database() -> Iterator[str]:
    """A database of its own for the fixtures' tables (they name them: stress_test_items,
    schema auth ...), dropped afterwards, so they neither meet other tests' tables nor stay."""
    dsn = require_dsn()
    name = unique_name("e2e")
    execute(dsn, f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))
    finally:
        execute(dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def e2e_services(tmp_path_factory, e2e_database) -> Iterator[None]:
    """Keychain entries for that database, and a catalog of every valid fixture."""
    from noetl_temporal.store.catalog import Catalog

    entry = json.dumps(fields(e2e_database))
    catalog_file = tmp_path_factory.mktemp("e2e-catalog") / "catalog.db"
    with pytest.MonkeyPatch.context() as mp:
        for name in KEYCHAIN:
            mp.setenv(f"NOETL_KEYCHAIN_{name.upper()}", entry)
        nats_url = nats_server.find_url()
        if nats_url is not None:
            for name in NATS_KEYCHAIN:
                mp.setenv(f"NOETL_KEYCHAIN_{name.upper()}", json.dumps({"url": nats_url}))
            nats_server.create_buckets(nats_url, NATS_BUCKETS)
        mp.setenv("NOETL_CATALOG_PATH", str(catalog_file))
        catalog = Catalog(sqlite_path=catalog_file)
        for path in valid_files():
            try:
                catalog.register((E2E / path).read_text(encoding="utf-8"), source=str(E2E / path))
            except PlaybookInvalid:  # a path the catalog refuses: no one calls it
                pass
        yield


@pytest.fixture
def paginated_api() -> Iterator[PaginatedAPIServer]:
    with PaginatedAPIServer() as api:  # fresh per test: its flaky and probe counters are global
        yield api


async def run_fixture(temporal, task_queue: str, api: PaginatedAPIServer, path: str) -> RunReport:
    file = E2E / path
    payload = {"api_url": api.base_url, **NEEDS[path].payload}
    return await run_with_client(temporal.client, load_playbook(file).playbook, task_queue=task_queue,
                                 source=str(file), payload=payload, execution_timeout_s=RUN_TIMEOUT_S)


def started(report: RunReport) -> list[str]:
    return [e["entity_id"] for e in report.events if e["event_type"] == "step.started"]


def field_of(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        assert isinstance(value, dict) and part in value, f"no {dotted!r} in {value!r}"[:500]
        value = value[part]
    return value


def check_noetl_validation(report: RunReport, validation: dict[str, Any]) -> None:
    """The steps and values NoETL's regression runner checks (fixtures/playbook_test_config.yaml).

    Two readings of NoETL's terms: ``min_steps`` counts the step records of NoETL's execution,
    which for a step with a task list include its tasks, so here it counts the distinct steps
    and tasks started; a step's ``status`` field is NoETL's envelope status (``success``),
    here the step's state (``COMPLETED``), and the other fields are read in the step result.
    """
    steps = started(report)
    tasks = {e["entity_id"] for e in report.events if e["event_type"] == "task.started"}
    assert len(set(steps) | tasks) >= validation.get("min_steps", 0), (steps, tasks)
    for step in validation.get("required_steps", []):
        assert step in steps, (step, steps)
    for step, checks in (validation.get("step_validations") or {}).items():
        if checks.get("status") == "action_completed":
            assert report.steps[step]["status"] == "COMPLETED", report.steps[step]
        result = report.steps[step]["result"]
        if checks.get("result_type") == "dict":
            assert isinstance(result, dict), result
        for name in checks.get("result_fields", []):
            field_of(result, name)
        for check in checks.get("result_checks", []):
            if check["field"] == "status" and check["value"] == "success":
                assert report.steps[step]["status"] == "COMPLETED", (step, check)
            else:
                assert field_of(result, check["field"]) == check["value"], (step, check)


def expected_state(path: str, report: RunReport) -> str:
    if path == RANDOM:  # FAILED is right only when every attempt raised
        done = any(e["event_type"] == "task.attempt.done" and e["entity_id"] == "start_task"
                   for e in report.events)
        return "COMPLETED" if done else "FAILED"
    return NEEDS[path].expect


def _id(path: str) -> str:
    return Path(path).relative_to("fixtures").as_posix().removesuffix(".yaml")


@pytest.mark.parametrize("path", runnable(), ids=_id)
async def test_e2e_fixture_ends_as_expected(temporal, task_queue, e2e_services, paginated_api, path):
    if NEEDS[path].reason.startswith("nats"):
        nats_server.require_url()
    for setup in NEEDS[path].setup:
        before = await run_fixture(temporal, f"{task_queue}-setup", paginated_api, setup)
        assert before.state == NEEDS[setup].expect, (setup, before.error)
    report = await run_fixture(temporal, task_queue, paginated_api, path)
    need = NEEDS[path]
    if need.differs:  # it must fail for the recorded reason, and no other
        assert report.state == "FAILED" and need.fails_with in (report.error or ""), report.error
        pytest.xfail(need.differs)
    assert report.state == expected_state(path, report), report.error
    if report.state == "FAILED" and need.fails_with:  # an expected failure, for its recorded reason
        assert need.fails_with in (report.error or ""), report.error
    validation = noetl_validation(path)
    if validation and report.state == "COMPLETED":
        check_noetl_validation(report, validation)


QUANTUM = P + "quantum_cudaq/quantum_cudaq.yaml"


async def test_quantum_cudaq_runs_its_fallbacks_as_its_row_says(temporal, task_queue, e2e_services, paginated_api):
    """NoETL runs it whatever `executor.requires.features` names (NTL340): here each service it
    lacks takes the playbook's own fallback, which its last step's notes record. Its postgres
    insert reads NoETL's envelope `{{ ai_analysis.data... }}`, read as NoETL does
    (`step-envelope-data`), so its rows are saved and the playbook's rule notes that."""
    report = await run_fixture(temporal, task_queue, paginated_api, QUANTUM)
    assert report.state == "COMPLETED", report.error
    end = report.steps["end"]["result"]
    assert end["runs"] == 2 and end["notes"] == [
        "Problem catalog unavailable; using fallback problem spec", "Postgres persistence succeeded",
        "HTTP dispatch failed"], end
    assert "Postgres persistence succeeded" in NEEDS[QUANTUM].reason
    assert not [e for e in report.events if e["event_type"] == "task.failed" and e["entity_id"] == "persist_results_task"]
    simulated = report.steps["run_simulations"]["result"]["results"]
    assert [r["backend"] for r in simulated] == ["simulated::ModuleNotFoundError"] * 2  # no CUDA-Q here
