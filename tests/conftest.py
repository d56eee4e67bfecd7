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

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.runner import RunReport, run_with_client
from noetl_temporal.temporal.devserver import EmbeddedTemporal
from tests.support import confine
from tests.support.corpus import NOETL
from tests.support.http_server import HTTPTestServer

# Tests never touch the user's real event store.
_SCRATCH = Path(tempfile.mkdtemp(prefix="noetl-test-"))
os.environ["NOETL_EVENT_STORE"] = str(_SCRATCH / "events.db")
os.environ["NOETL_PAYLOAD_STORE"] = str(_SCRATCH / "payloads")
os.environ["NOETL_RESULT_STORE"] = str(_SCRATCH / "results")
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
_END_TO_END = ("temporal", "api", "golden", "chaos")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).parent.name in _END_TO_END:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1))
