"""A relative ``kind: playbook`` path is found next to the parent playbook (its file, or its
catalog path) on every surface, wherever the worker runs; a missing child names the
resolved path and the task's place (issue 37, item 5)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import noetl_temporal
from noetl_temporal.client.connect import start_execution
from noetl_temporal.dsl import load_playbook
from noetl_temporal.hosting.worker import build_worker

pytestmark = pytest.mark.temporal

CHILD = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: child, path: flows/child}
workload: {n: 1}
workflow:
  - step: double
    tool: {kind: noop, result: {doubled: "{{ workload.n * 2 }}", who: next-to-parent}}
"""

PARENT = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: parent, path: flows/parent}
workflow:
  - step: call
    tool:
      - name: sub
        kind: playbook
        path: CHILD_REF
        input: {n: 21}
        return_step: double
    next: {arcs: [{step: done}]}
  - step: done
    tool: {kind: noop, result: "{{ call }}"}
"""


def write_pair(root: Path, child_ref: str = "child.yaml") -> Path:
    """parent.yaml and child.yaml side by side in ``root/pb``; returns that directory."""
    folder = root / "pb"
    folder.mkdir()
    (folder / "child.yaml").write_text(CHILD)
    (folder / "parent.yaml").write_text(PARENT.replace("CHILD_REF", child_ref))
    return folder


def cli(args: list[str], cwd: Path, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


class Worker:
    """``noetl-temporal worker`` in its own process and working directory."""

    def __init__(self, address: str, task_queue: str, cwd: Path) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", address, "--task-queue", task_queue],
            cwd=cwd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.popen.stderr or []), daemon=True).start()

    def wait_polling(self, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.popen.poll() is None:
            if any("worker polling" in line for line in self.stderr):
                return
            time.sleep(0.1)
        raise AssertionError(f"the worker did not start: {self.stderr[-20:]}")

    def stop(self) -> None:
        self.popen.terminate()   # this process, by its own pid
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)


def completed_result(proc: subprocess.CompletedProcess[str]) -> object:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["state"] == "COMPLETED", report
    return report["steps"]["done"]["result"]


async def test_run_address_with_a_worker_in_another_directory(temporal, task_queue, tmp_path):
    """The issue's case: the worker's working directory is not the parent's, nor the CLI's."""
    folder = write_pair(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    worker = Worker(temporal.address, task_queue, cwd=elsewhere)
    try:
        await asyncio.to_thread(worker.wait_polling)
        proc = await asyncio.to_thread(cli, ["run", "parent.yaml", "--address", temporal.address,
                                             "--task-queue", task_queue, "--no-worker", "--json", "--quiet"],
                                       folder)
    finally:
        worker.stop()
    assert completed_result(proc) == {"doubled": 42, "who": "next-to-parent"}


async def test_embedded_run_from_another_directory(tmp_path):
    folder = write_pair(tmp_path)
    proc = await asyncio.to_thread(cli, ["run", str(folder.relative_to(tmp_path) / "parent.yaml"),
                                         "--json", "--quiet"], tmp_path)
    assert completed_result(proc) == {"doubled": 42, "who": "next-to-parent"}


async def test_start_execution_with_a_relative_source_then_a_worker_elsewhere(temporal, task_queue, tmp_path,
                                                                             monkeypatch):
    """``start_execution(source=...)`` records where the parent is as the caller sees it; a
    worker started afterwards in another directory still finds the child."""
    folder = write_pair(tmp_path)
    monkeypatch.chdir(folder)
    parent = load_playbook("parent.yaml").playbook
    handle = await start_execution(temporal.client, parent, task_queue=task_queue, source="parent.yaml",
                                   execution_timeout_s=60)
    monkeypatch.chdir(tmp_path)
    async with build_worker(temporal.client, task_queue=task_queue):
        output = await handle.result()
    assert output["state"] == "COMPLETED", output
    assert output["steps"]["done"]["result"] == {"doubled": 42, "who": "next-to-parent"}


async def test_library_run_with_a_relative_path(temporal, task_queue, tmp_path, monkeypatch):
    folder = write_pair(tmp_path)
    monkeypatch.chdir(folder.parent)
    outcome = await asyncio.to_thread(noetl_temporal.run, "pb/parent.yaml", address=temporal.address,
                                      task_queue=task_queue)
    assert outcome["status"] == "ok", outcome
    assert outcome["step_results"]["done"] == {"doubled": 42, "who": "next-to-parent"}


async def test_missing_child_names_the_resolved_path_and_the_task(tmp_path):
    folder = write_pair(tmp_path, child_ref="nochild.yaml")
    proc = await asyncio.to_thread(cli, ["run", "pb/parent.yaml"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert f"no file {folder / 'nochild.yaml'}" in out, out
    assert "next to the parent playbook" in out and str(folder / "parent.yaml") in out, out
    # located at the task's `path:` (line 9 of PARENT) in the parent file
    assert "pb/parent.yaml:9:" in out, out
    assert "Traceback" not in out


def test_inline_source_is_not_made_a_file():
    from noetl_temporal.workflow.subplaybooks import located_source

    assert located_source("inline") == "inline"
    assert located_source("catalog:a/b@1") == "catalog:a/b@1"
    assert located_source("<test>") == "<test>"
    assert located_source("no/such/file.yaml") == "no/such/file.yaml"
