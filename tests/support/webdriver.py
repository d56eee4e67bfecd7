"""Headless Chromium driven through chromedriver's W3C WebDriver HTTP API (no selenium).

Why chromedriver rather than ``chromium --dump-dom``: the execution page updates from a
live event stream, so a test must read the DOM *while* the page runs and wait for a
state to appear, which a one-shot dump cannot do.

``Browser.skip_reason()`` is None when both binaries exist; tests skip with it locally
and fail in CI (``$CI`` set), where ``.ci/run`` installs ``chromium chromium-driver``.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import time
from typing import Any

import httpx

from noetl_temporal.client.devserver import free_port

__all__ = ["Browser", "CHROMIUM", "CHROMEDRIVER"]

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
CHROMEDRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)


class Browser:
    """``with Browser() as b: b.open(url); b.wait_js("return ...")``; one headless window."""

    def __init__(self, width: int = 1200, height: int = 900) -> None:
        self.size = (width, height)
        self._proc: subprocess.Popen | None = None
        self._http: httpx.Client | None = None
        self._session: str | None = None

    @staticmethod
    def skip_reason() -> str | None:
        missing = [name for name, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if not path]
        if not missing:
            return None
        return (f"{' and '.join(missing)} not installed (apt-get install -y chromium chromium-driver); "
                "CI installs them (.ci/run)")

    def __enter__(self) -> Browser:
        assert CHROMIUM and CHROMEDRIVER, self.skip_reason()
        port = free_port()
        self._proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        self._http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._http.get("/status").json()["value"]["ready"]:
                    break
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("chromedriver did not become ready within 30 s")
            time.sleep(0.1)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={self.size[0]},{self.size[1]}"]
        body = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": CHROMIUM, "args": args}}}}
        self._session = self._call("POST", "/session", body)["sessionId"]
        return self

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        assert self._http is not None
        response = self._http.request(method, path, json=body)
        value = response.json().get("value")
        if response.status_code >= 400:
            raise RuntimeError(f"webdriver {method} {path}: {value}")
        return value

    def open(self, url: str) -> None:
        self._call("POST", f"/session/{self._session}/url", {"url": url})

    def js(self, script: str, *args: Any) -> Any:
        return self._call("POST", f"/session/{self._session}/execute/sync", {"script": script, "args": list(args)})

    def wait_js(self, script: str, *args: Any, timeout: float = 30.0, what: str = "") -> Any:
        """Run ``script`` until it returns something truthy; its last value in the error otherwise."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.js(script, *args)
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what or script}; last value {value!r}")

    def screenshot(self, path: str | os.PathLike[str]) -> None:
        data = self._call("GET", f"/session/{self._session}/screenshot")
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def __exit__(self, *exc: object) -> None:
        if self._session and self._http:
            try:
                self._call("DELETE", f"/session/{self._session}")
            except Exception:  # noqa: BLE001 - the driver is killed next anyway
                pass
        if self._http:
            self._http.close()
        if self._proc and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)  # chromedriver's own group: it and its browser
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(10)
