"""``noetl-temporal codec-server`` run as a subprocess over the tests' user codec, as an
operator runs it (tests/cli/test_cli_codec_server.py, tests/client/test_temporal_ui.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from noetl_temporal.client.devserver import free_port

__all__ = ["CODEC", "CodecServer", "environ"]

REPO = Path(__file__).resolve().parents[2]
CODEC = "tests.support.user_codec:codec"


def environ() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "NOETL_CODEC"}
    environ["PYTHONPATH"] = str(REPO)   # the user's codec module is importable, as on their machine
    return environ


class CodecServer:
    """``noetl-temporal codec-server`` as a subprocess on a free port; stopped by its pid."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "noetl_temporal.cli", "codec-server",
                                      "--port", str(self.port), *args], cwd=REPO, env=environ(),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, self.proc.communicate()
            try:
                httpx.post(f"{self.url}/decode", json={"payloads": []}, timeout=2)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    self.proc.kill()
                    raise AssertionError("the codec server did not listen within 60 s") from None
                time.sleep(0.1)

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err
