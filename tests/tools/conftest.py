"""Fixtures for the tool tests: real subprocesses and a real HTTP server, no mocks.

``http_server`` is defined here too (it shadows the suite-wide one) so the tool tests
need nothing from the Temporal fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from noetl_temporal.tools import ToolCall, aclose_clients
from tests.support.http_server import HTTPTestServer


@pytest.fixture(scope="session")
def http_server() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as srv:
        yield srv


@pytest.fixture
def call() -> ToolCall:
    return ToolCall(execution_id="exec-1", step="step_a", task="task_0")


@pytest.fixture(scope="session", autouse=True)
async def _close_http_clients() -> AsyncIterator[None]:
    yield
    await aclose_clients()
