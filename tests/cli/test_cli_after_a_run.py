"""What a newcomer types after a first embedded run, driven as a subprocess: the commands
read the run back from the event store, and each behaves as a Unix tool does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "noetl_temporal.cli"]


def _env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    return {**env, "NOETL_STORE": str(store.parent)}   # its events.db is ``store``


@pytest.fixture(scope="module")
def embedded_run(tmp_path_factory) -> tuple[str, subprocess.CompletedProcess, dict[str, str]]:
    """One `run` on its own embedded dev server (no --address): its id, its output, its env."""
    env = _env(tmp_path_factory.mktemp("store") / "events.db")
    proc = subprocess.run([*CLI, "run", "examples/hello.yaml", "--set", "name=new"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    execution_id = re.search(r"^execution (\S+) started", proc.stderr, re.M).group(1)
    return execution_id, proc, env


def _with_reader_gone(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run a command whose stdout is a pipe nobody reads any more (`... | head` after head
    exited): the read end is closed before the command starts, so its first write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([*CLI, *args], cwd=REPO, env=env, stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("command", ["events", "schema"])
def test_a_closed_pipe_ends_the_command_quietly(embedded_run, command):
    execution_id, _, env = embedded_run
    args = ["events", execution_id] if command == "events" else ["schema"]
    proc = _with_reader_gone(args, env)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == 141    # as a shell reports a tool stopped by SIGPIPE


def test_status_prints_json_values_not_python_ones(embedded_run):
    execution_id, _, env = embedded_run
    proc = subprocess.run([*CLI, "status", execution_id], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split(None, 1) for line in proc.stdout.splitlines())
    assert fields["execution_id"] == execution_id and fields["state"] == "COMPLETED"
    assert fields["completion_inferred"] == "false", proc.stdout
    assert not re.search(r"\b(None|False|True)\b", proc.stdout), proc.stdout


def test_after_an_embedded_run_it_prints_the_command_that_still_works(embedded_run):
    """The server the start hint names (`--address 127.0.0.1:<port>`) stopped with the run; the
    last line names the command that works now, and that command answers."""
    execution_id, proc, env = embedded_run
    assert re.search(rf"control it: .* {re.escape(execution_id)} --address \S+ \(while this run lasts\)",
                     proc.stderr), proc.stderr
    last = proc.stderr.rstrip().splitlines()[-1]
    command = re.search(rf"(noetl-temporal status\|events {re.escape(execution_id)})(.*)$", last)
    assert command and "--address" not in last, proc.stderr
    answers = {verb: subprocess.run([*CLI, verb, execution_id], cwd=REPO, env=env, capture_output=True,
                                    text=True, timeout=120) for verb in ("status", "events")}
    assert all(p.returncode == 0 for p in answers.values()), {v: p.stderr for v, p in answers.items()}
    assert re.search(r"^state\s+COMPLETED$", answers["status"].stdout, re.M), answers["status"].stdout
    assert "playbook.completed" in answers["events"].stdout or "step.done" in answers["events"].stdout
