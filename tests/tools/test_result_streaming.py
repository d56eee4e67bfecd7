"""Results stream, with a cap: a python result over the inline cap goes from the task's
process to the result store without being held whole in the worker, and one over the hard
cap (``NOETL_MAX_RESULT_BYTES``) fails the task with its size.

The worker is a real subprocess (a stand-in running the tool as the activity does, with a
task run id); its peak memory is its own ``VmHWM`` from ``/proc/self/status``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")

SIZE = 200_000_000  # characters of the result string: 200 MB of JSON

WORKER = textwrap.dedent("""
    import asyncio, json, os, sys
    from noetl_temporal.tools import ToolCall, run_tool

    def peak():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    async def main(size, cap, over):
        call = ToolCall(execution_id="exec-big", step="s", task="t", task_run_id="s.t-1", store_result=True)
        assert (await run_tool("python", {"code": "result = 1"}, call))["status"] == "ok"  # warm up
        before = peak()
        big = await run_tool("python", {"code": f"result = 'x' * {size}"}, call)
        after = peak()
        os.environ["NOETL_MAX_RESULT_BYTES"] = str(cap)
        too_big = await run_tool("python", {"code": f"result = 'y' * {over}"}, call)
        print(json.dumps({"before": before, "after": after, "big": big, "too_big": too_big}))

    asyncio.run(main(*map(int, sys.argv[1:])))
""")


def _run_worker(tmp_path, *args: int) -> dict:
    env = {**os.environ, "NOETL_RESULT_STORE": str(tmp_path / "store"), "NOETL_RESULT_STORE_KIND": "fs"}
    env.pop("NOETL_MAX_RESULT_BYTES", None)
    proc = subprocess.run([sys.executable, "-c", WORKER, *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_large_result_streams_to_the_store_and_one_over_the_cap_fails(tmp_path) -> None:
    report = _run_worker(tmp_path, SIZE, 20_000_000, 30_000_000)
    big = report["big"]
    assert big["status"] == "ok", big.get("error")
    ref = big["result"]
    assert ref["kind"] == "result_ref" and ref["store"] == "fs" and ref["ref"].startswith("noetl://fs/exec-big/")
    assert ref["meta"]["bytes"] == SIZE + 2  # the JSON string, quotes included
    stored = tmp_path / "store" / "exec-big" / ref["ref"].rsplit("/", 1)[-1]
    assert stored.stat().st_size == SIZE + 2
    digest = hashlib.sha256()
    with open(stored, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == ref["meta"]["sha256"]
    # The worker never held the result: its peak rose by far less than the result's size
    # (the old path, a response buffer, its copy, the parsed value and the store's JSON,
    # raised it by about 4x the size).
    rise = report["after"] - report["before"]
    assert rise < SIZE // 4, f"the worker's peak rose by {rise:,} bytes for a {SIZE:,}-byte result"
    # Over the hard cap: a clean failure that names the size and the cap.
    too_big = report["too_big"]
    assert too_big["status"] == "error"
    error = too_big["error"]
    assert error["code"] == "ResultTooLarge" and error["kind"] == "python"
    assert "30,000,002 bytes" in error["message"] and "20,000,000" in error["message"], error["message"]
    assert "NOETL_MAX_RESULT_BYTES" in error["message"] and error["fix"]
