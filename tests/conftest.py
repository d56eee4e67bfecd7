"""Shared fixtures: one real Temporal dev server per test session, a fresh task queue
per test, and a real HTTP server on loopback."""

from __future__ import annotations

import gc
import os
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest
import pytest_asyncio

from noetl_temporal.client.devserver import EmbeddedTemporal
from noetl_temporal.client.end_to_end import RunReport, run_with_client
from noetl_temporal.dsl import load_playbook_text
from tests.support import confine
from tests.support.corpus import NOETL
from tests.support.http_server import HTTPTestServer

# Tests never touch the user's real event store.
_SCRATCH = Path(tempfile.mkdtemp(prefix="noetl-test-"))
os.environ["NOETL_STORE"] = _SCRATCH.as_uri()  # its events.db, payloads/ and results/
# ... nor the data beside the checkout: a fresh clone has only what is under tests/.
confine.install()

REPO = Path(__file__).resolve().parents[1]
CORPUS = NOETL  # the users' playbooks, copied into tests/corpus (tests/support/corpus.py)


@pytest_asyncio.fixture(scope="session")
async def temporal():
    async with EmbeddedTemporal() as env:
        yield env
    gc.collect()


@pytest.fixture(scope="session")
def http_server():
    with HTTPTestServer() as srv:
        yield srv


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def run_yaml(temporal, task_queue):
    """``await run_yaml(text, payload=...)`` runs a playbook on the dev server."""

    async def _run(text: str, payload: dict | None = None, **kwargs) -> RunReport:
        kwargs.setdefault("execution_timeout_s", 60)  # a stuck workflow fails the test, not hangs it
        loaded = load_playbook_text(textwrap.dedent(text), source="<test>")
        return await run_with_client(temporal.client, loaded.playbook, task_queue=task_queue,
                                     payload=payload, **kwargs)

    return _run


# End-to-end tests run real servers and subprocesses on a shared 2-core machine, where a
# timing assumption can miss once under load. They get one retry; a test that fails twice
# fails the run. Pure tests (engine, dsl, tools) never retry.
_END_TO_END = ("workflow", "hosting", "client", "conversion", "api", "golden", "chaos", "cli")


# The long tiers: left out of the README's default run (pyproject's addopts deselects them),
# every one run by .ci/run (`-m 'chaos or scale or corpus or browser'`). One table: a file
# (or folder) belongs to the tier that names it; the marker is what `-m` selects.
TIERS = {
    "chaos": ("chaos/", "hosting/test_worker_crash.py",
              "workflow/test_attempts_joins_handled.py::test_an_attempt_lost_with_its_worker_counts"),
    "corpus": ("workflow/test_e2e_runs.py",),
    "scale": ("workflow/test_large_playbooks.py", "cli/test_cli_run_scale.py",
              "api/test_event_paging_scale.py", "hosting/test_multi_worker.py",
              "hosting/test_embedding.py", "api/test_api_property.py", "fuzz/", "cli/test_cli_schedules.py",
              "api/test_api_load.py", "playtest/test_modes_agree.py", "workflow/test_cursor_scale.py",
              "cli/test_cli_redrive_scale.py",
              # the slowest single tests (6-16 s: crashes, timeouts waited out), so the default run keeps a margin under 10 minutes
              "workflow/test_fast_path.py::test_a_step_timeout_cancels_a_task_on_the_fast_path",
              "api/test_status_without_worker.py::test_status_without_a_worker_is_fast_running_and_says_no_worker_polls",
              "cli/test_cli_surfaces.py::test_dev_logs_a_cancelled_task_in_one_line",
              "workflow/test_attempts_joins_handled.py::test_attempt_in_python_args_code_and_http_url_params_is_1_2_3",
              "benchmarks/test_definitions.py::test_api_paging_benchmark_runs_on_small_sizes",
              "client/test_temporal_close.py::test_each_playbook_state_is_its_temporal_close_status",
              "workflow/test_cursor_loops.py::test_a_postgres_claim_loop_reads_10000_rows_a_page_at_a_time",
              "cli/test_cli_noetl_habits.py::test_run_names_a_catalog_entry_and_checks_target_and_input",
              "cli/test_cli_honoured_keys.py::test_step_policy_lifecycle_timeout_fails_the_step_without_waiting_for_its_task",
              "workflow/test_noetl_additions.py::test_step_spec_timeout_unrouted_fails_the_run",
              "workflow/test_noetl_additions.py::test_step_spec_timeout_bounds_the_whole_step_run"),
    "browser": ("api/test_view_page.py", "client/test_temporal_ui.py", "api/test_view_approval.py",
                "api/test_redrive_page.py", "api/test_step_controls_page.py"),
}


def tier_of(path: Path, test: str = "") -> str | None:
    """The tier a test belongs to (its folder, its file, or ``file::test`` for one test function
    with all its parameters), or None for the default run."""
    relative = path.resolve().relative_to(REPO / "tests").as_posix()
    for tier, places in TIERS.items():
        if any(relative == place or (place.endswith("/") and relative.startswith(place))
               or place == f"{relative}::{test}" for place in places):
            return tier
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name in _END_TO_END:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1))
        tier = tier_of(path, getattr(item, "originalname", item.name))
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
