"""`noetl-temporal run` on a playbook big enough that the workflow forgets persisted events:
progress and ``--json`` still follow the log by ``seq`` and the command returns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.engine_scale import chain

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
STEPS = 2_000   # 12,000 events: the workflow keeps the last 2,000 or so in memory


def test_run_of_a_big_chain_returns_with_progress_and_a_bounded_json_report(tmp_path):
    playbook = tmp_path / "chain.yaml"
    playbook.write_text(chain(STEPS))
    env = dict(os.environ, NOETL_STORE=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(playbook), "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    # Progress lines: every step once, in order, by seq (no event twice, none skipped).
    done = re.findall(r"^\[\s*(\d+)\] step\.done\s+(s\d+)$", proc.stderr, re.MULTILINE)
    assert [name for _, name in done] == [f"s{i}" for i in range(STEPS)]
    seqs = [int(seq) for seq, _ in done]
    assert seqs == sorted(seqs) and seqs[-1] < report["event_count"]
    assert report["state"] == "COMPLETED" and report["steps"][f"s{STEPS - 1}"]["status"] == "COMPLETED"
    assert report["events_truncated"] and report["event_count"] > 5 * STEPS  # far more than the workflow keeps
    assert [e["seq"] for e in report["events"]] == list(range(1, 1001))
    assert "Traceback" not in proc.stderr


async def test_events_follow_reads_every_event_once_while_the_workflow_forgets(temporal, task_queue):
    """`noetl-temporal events ID --follow` on a running big chain: the store for what the
    workflow forgot, the workflow for the tail, each event once, in seq order, to the end."""
    import asyncio

    from noetl_temporal.client.connect import start_execution
    from noetl_temporal.dsl import load_playbook_text
    from noetl_temporal.hosting.worker import build_worker

    steps = 1_500
    playbook = load_playbook_text(chain(steps)).playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "noetl_temporal.cli", "events", handle.id, "--follow", "--json",
            "--address", temporal.address, cwd=REPO, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        await handle.result()
    assert proc.returncode == 0, err.decode()[-3000:]
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len(events) > 5 * steps and "playbook.finished" in {e["event_type"] for e in events[-3:]}
