"""Scratch directories of killed workers are removed when a worker starts (issue 24: 109
empty ``noetl-py-*`` directories stayed after 9 SIGKILLs, and restarts never removed them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from noetl_temporal.tools import _workdirs

_WORKER = """
import sys, tempfile, time
tempfile.tempdir = sys.argv[1]
from noetl_temporal.tools import _workdirs
path = _workdirs.take()
open(path + "/half-written", "w").write("x")
print(path, flush=True)
time.sleep(600)
"""


def _killed_worker_dir(tmp_path: Path) -> Path:
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    path = Path(proc.stdout.readline().strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    return path


def test_a_killed_workers_directories_are_swept_and_a_live_ones_are_not(tmp_path):
    dead = _killed_worker_dir(tmp_path)
    assert dead.is_dir() and dead.name.startswith("noetl-py-")
    live = tmp_path / f"noetl-py-{os.getpid()}-mine"
    live.mkdir()
    other_live = tmp_path / "noetl-py-1-init"   # pid 1 is alive (and not ours)
    other_live.mkdir()
    unowned_old, unowned_new = tmp_path / "noetl-py-abc", tmp_path / "noetl-py-def"
    unowned_old.mkdir()
    unowned_new.mkdir()
    old = time.time() - 2 * 3600
    os.utime(unowned_old, (old, old))
    unrelated = tmp_path / "something-else"
    unrelated.mkdir()

    assert _workdirs.sweep(str(tmp_path)) == 2
    assert not dead.exists() and not unowned_old.exists()
    assert live.is_dir() and other_live.is_dir() and unowned_new.is_dir() and unrelated.is_dir()


def test_a_worker_names_its_directories_after_itself():
    path = _workdirs.take()
    try:
        assert Path(path).name.startswith(f"noetl-py-{os.getpid()}-")
    finally:
        _workdirs.give_back(path)
