"""Golden playbooks: each folder's playbook.yaml runs on the dev server and must match its
expected.json (final state, step statuses/results, and the (event_type, entity_id) sequence).

Re-record after a deliberate change: ``python -m tests.golden.test_golden --record``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

import pytest

from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook
from noetl_temporal.hosting.worker import SANDBOX_ENV

HERE = Path(__file__).resolve().parent
CASES = sorted(p.name for p in HERE.iterdir() if (p / "playbook.yaml").is_file())


def observed(report) -> dict:
    return {
        "state": report.state,
        "steps": {name: {"status": info["status"], "runs": info["runs"], "result": info["result"]}
                  for name, info in sorted(report.steps.items())},
        "events": [[e["event_type"], e.get("entity_id")] for e in report.events
                   if not e["event_type"].startswith(("playbook.", "workflow."))],
    }


async def run_case(client, name: str):
    path = HERE / name / "playbook.yaml"
    return await run_with_client(client, load_playbook(path).playbook, task_queue=f"golden-{uuid.uuid4().hex[:8]}",
                                 source=str(path), execution_timeout_s=60)


@pytest.mark.temporal
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_golden(temporal, name, sandboxed, monkeypatch):
    """Under both workflow runners (unsandboxed is the default, see hosting/worker.py)."""
    monkeypatch.setenv(SANDBOX_ENV, "1" if sandboxed else "0")
    expected = json.loads((HERE / name / "expected.json").read_text())
    got = observed(await run_case(temporal.client, name))
    if not expected.get("events_ordered", True):
        got["events"] = sorted(got["events"])
        expected["events"] = sorted(expected["events"])
    expected.pop("events_ordered", None)
    assert got == expected


async def _record() -> None:
    from noetl_temporal.client.devserver import EmbeddedTemporal

    async with EmbeddedTemporal() as env:
        for name in CASES:
            target = HERE / name / "expected.json"
            ordered = json.loads(target.read_text()).get("events_ordered", True) if target.exists() else True
            data = observed(await run_case(env.client, name))
            data["events_ordered"] = ordered
            target.write_text(json.dumps(data, indent=1) + "\n")
            print(name, data["state"])


if __name__ == "__main__" and "--record" in sys.argv:
    asyncio.run(_record())
