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
    env = dict(os.environ, NOETL_EVENT_STORE=str(tmp_path / "events.db"))
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
