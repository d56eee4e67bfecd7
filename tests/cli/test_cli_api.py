"""``noetl-temporal dev`` and ``noetl-temporal api`` as a user runs them: real processes, real ports.

``dev`` runs with an empty HOME and no NOETL_* settings, as on a fresh machine: it must
start Temporal with its UI, a worker and the API, print the three URLs, run a playbook
and stop cleanly on Ctrl-C.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from noetl_temporal.client.devserver import free_port

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]


class Proc:
    """A CLI process whose stdout lines are read in the background."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.popen = subprocess.Popen([sys.executable, "-m", "noetl_temporal.cli", *args], env=env, cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.popen.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.popen.stderr, self.stderr.append), daemon=True).start()

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line.rstrip("\n"))

    def wait_line(self, prefix: str, timeout: float = 90) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.popen.poll() is not None:
                    break
                continue
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line starting with {prefix!r}; stderr: {self.stderr[-20:]}")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 45) -> int:
        self.popen.send_signal(sig)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)
            raise AssertionError(f"did not stop within {timeout}s; stderr: {self.stderr[-20:]}") from None

    def kill(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


def fresh_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NOETL_", "TEMPORAL_", "XDG_")) and k not in ("HOME",)}
    env["HOME"] = str(home)
    return env


def wait_completed(http: httpx.Client, execution_id: str, timeout: float = 60) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = http.get(f"/executions/{execution_id}/status").json()
        if status["state"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return status
        time.sleep(0.2)
    raise AssertionError(f"{execution_id} did not finish")


def test_dev_on_a_fresh_machine(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    proc = Proc(["dev", "--port", "0", "--temporal-port", str(free_port()), "--ui-port", str(free_port())],
                fresh_env(home))
    try:
        temporal_line = proc.wait_line("Temporal: ")
        ui_line = proc.wait_line("Temporal UI: ")
        api_line = proc.wait_line("API: ")
        assert re.match(r"Temporal: 127\.0\.0\.1:\d+ ", temporal_line)
        ui_url = ui_line.split()[2]
        api_url = re.match(r"API: (http://127\.0\.0\.1:\d+) \(docs at /docs\)", api_line).group(1)
        with httpx.Client(base_url=api_url, timeout=30) as http:
            assert http.get("/ready").json()["status"] == "ready"
            assert http.get("/docs").status_code == 200
            text = (REPO / "examples" / "hello.yaml").read_text()
            assert http.post("/catalog", json={"content": text}).status_code == 201
            r = http.post("/executions", json={"path": "examples/hello", "payload": {"name": "dev"}})
            assert r.status_code == 202, r.text
            assert wait_completed(http, r.json()["execution_id"])["state"] == "COMPLETED"
        assert httpx.get(ui_url, timeout=30).status_code == 200
        assert (home / ".local" / "share" / "noetl-temporal" / "catalog.db").exists()
        assert proc.stop(signal.SIGINT) == 0
    finally:
        proc.kill()


def test_api_command_against_an_existing_temporal(temporal, tmp_path):
    env = fresh_env(tmp_path)
    env["NOETL_API_TOKEN"] = "t0ken"
    proc = Proc(["api", "--port", "0", "--address", temporal.address, "--worker",
                 "--task-queue", f"tq-cli-{os.getpid()}", "--catalog-path", str(tmp_path / "c.db"),
                 "--event-store", str(tmp_path / "events.db")], env)
    try:
        api_url = re.match(r"API: (http://127\.0\.0\.1:\d+)", proc.wait_line("API: ")).group(1)
        with httpx.Client(base_url=api_url, timeout=30) as http:
            assert http.get("/executions").status_code == 401
            auth = {"Authorization": "Bearer t0ken"}
            text = "metadata: {name: cli}\nworkflow:\n  - step: a\n    tool: {kind: python, code: 'result = 7'}\n"
            r = http.post("/executions", json={"playbook": text}, headers=auth)
            assert r.status_code == 202, r.text
            http.headers.update(auth)
            assert wait_completed(http, r.json()["execution_id"])["state"] == "COMPLETED"
        assert proc.stop(signal.SIGTERM) == 0
    finally:
        proc.kill()


def test_api_command_needs_a_temporal_address(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "api", "--port", "0"],
                          env=fresh_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "noetl-temporal dev" in proc.stderr


def test_port_in_use_is_a_clear_error(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "dev", "--port", str(port)],
                              env=fresh_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr
