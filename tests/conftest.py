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
    "chaos": ("chaos/",),
    "corpus": ("workflow/test_e2e_runs.py",),
    "scale": ("workflow/test_large_playbooks.py", "cli/test_cli_run_scale.py",
              "api/test_event_paging_scale.py", "hosting/test_multi_worker.py",
              "hosting/test_embedding.py", "api/test_api_property.py", "fuzz/", "cli/test_cli_schedules.py",
              "api/test_api_load.py", "playtest/test_modes_agree.py", "workflow/test_cursor_scale.py",
              "cli/test_cli_redrive_scale.py"),
    "browser": ("api/test_view_page.py", "client/test_temporal_ui.py", "api/test_view_approval.py",
                "api/test_redrive_page.py", "api/test_step_controls_page.py"),
}


def tier_of(path: Path) -> str | None:
    """The tier a test file belongs to, or None for the default run."""
    relative = path.resolve().relative_to(REPO / "tests").as_posix()
    for tier, places in TIERS.items():
        if any(relative == place or (place.endswith("/") and relative.startswith(place))
               for place in places):
            return tier
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name in _END_TO_END:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1))
        tier = tier_of(path)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
