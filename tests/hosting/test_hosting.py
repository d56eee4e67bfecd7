"""A hosted worker stops with its tools' resources closed (real dev server, real tools)."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.lifecycle import hosted_worker
from noetl_temporal.tools import aclose_clients
from noetl_temporal.tools import http as http_tool
from noetl_temporal.tools.python import forkserver
from tests.support.processes import pid_alive, wait_dead

pytestmark = pytest.mark.temporal


def _playbook(url: str):
    return load_playbook_text(textwrap.dedent(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: hosting}}
        workflow:
          - step: start
            tool:
              - {{name: fetch, kind: http, method: GET, url: "{url}"}}
              - {{name: compute, kind: python, code: "result = 6 * 7"}}
        """), source="<test>").playbook


async def _run_hosted(temporal, task_queue, http_server, *, owns_tools: bool):
    """Run one playbook on a hosted worker; what the tools pooled while it ran."""
    loop = asyncio.get_running_loop()
    async with hosted_worker(temporal.client, task_queue=task_queue, owns_tools=owns_tools):
        report = await run_with_client(temporal.client, _playbook(http_server.url("/json")),
                                       task_queue=task_queue, worker=False, execution_timeout_s=60)
        assert report.state == "COMPLETED", report.error
        clients = list(http_tool._CLIENTS.get(loop, {}).values())
        fork_server = forkserver.server_pid()
        if forkserver.enabled():
            assert fork_server is not None and pid_alive(fork_server)
    assert clients, "the http task pooled no client"
    return clients, fork_server


async def test_stopping_a_hosted_worker_closes_the_tools_resources(temporal, task_queue, http_server):
    clients, fork_server = await _run_hosted(temporal, task_queue, http_server, owns_tools=True)
    loop = asyncio.get_running_loop()
    assert all(client.is_closed for client in clients)
    assert not http_tool._CLIENTS.get(loop)
    assert forkserver.server_pid() is None
    if fork_server is not None:
        assert await wait_dead(fork_server), "the python fork server outlived its worker"


async def test_a_worker_that_does_not_own_the_tools_leaves_them_open(temporal, task_queue, http_server):
    clients, fork_server = await _run_hosted(temporal, task_queue, http_server, owns_tools=False)
    try:
        assert not any(client.is_closed for client in clients)
        assert forkserver.server_pid() == fork_server
    finally:
        await aclose_clients()
    assert all(client.is_closed for client in clients)


async def test_a_run_on_the_callers_client_leaves_the_tools_open(temporal, task_queue, http_server):
    """``run_with_client`` hosts its own worker, but the client (and the loop's tools) are
    the caller's: other workers on that loop may still use them."""
    report = await run_with_client(temporal.client, _playbook(http_server.url("/json")), task_queue=task_queue,
                                   execution_timeout_s=60)
    assert report.state == "COMPLETED", report.error
    clients = list(http_tool._CLIENTS.get(asyncio.get_running_loop(), {}).values())
    try:
        assert clients and not any(client.is_closed for client in clients)
    finally:
        await aclose_clients()
