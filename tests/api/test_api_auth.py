"""Auth on and off, and the bind rule."""

from __future__ import annotations

import subprocess
import sys

import pytest

from noetl_temporal.api.security import check_bind, is_loopback
from noetl_temporal.errors import ConfigError

from .conftest import app_client, make_settings

pytestmark = pytest.mark.temporal


async def test_token_required_when_configured(temporal, task_queue, catalog, event_store):
    settings = make_settings(temporal, task_queue, catalog, event_store, token="s3cret-token")
    async with app_client(settings) as http:
        for method, url in (("GET", "/executions"), ("GET", "/catalog"), ("GET", "/executions/x/status"),
                            ("POST", "/executions/x/cancel"), ("GET", "/executions/x/events/stream")):
            r = await http.request(method, url)
            assert r.status_code == 401, (url, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
        wrong = await http.get("/catalog", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        basic = await http.get("/catalog", headers={"Authorization": "Basic czNjcmV0LXRva2Vu"})
        assert basic.status_code == 401
        ok = await http.get("/catalog", headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200
        missing = await http.get("/executions/x/status", headers={"Authorization": "Bearer s3cret-token"})
        assert missing.status_code == 404
        # probes and docs stay open
        assert (await http.get("/health")).status_code == 200
        assert (await http.get("/ready")).status_code == 200
        spec = (await http.get("/openapi.json")).json()
        assert "HTTPBearer" in spec["components"]["securitySchemes"]
        assert "401" in spec["paths"]["/executions"]["get"]["responses"]


async def test_no_token_means_no_auth(temporal, task_queue, catalog, event_store):
    async with app_client(make_settings(temporal, task_queue, catalog, event_store)) as http:
        assert (await http.get("/catalog")).status_code == 200
        spec = (await http.get("/openapi.json")).json()
        assert "securitySchemes" not in spec.get("components", {})


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.5", True), ("::1", True),
                                            ("localhost", True), ("0.0.0.0", False), ("10.1.2.3", False),
                                            ("::", False), ("example.com", False)])
def test_bind_rule(host, loopback):
    assert is_loopback(host) is loopback
    check_bind(host, "token", False)
    check_bind(host, None, True)
    if loopback:
        check_bind(host, None, False)
    else:
        with pytest.raises(ConfigError, match="without an API token"):
            check_bind(host, None, False)


def test_cli_refuses_a_public_bind_without_token():
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "api", "--host", "0.0.0.0",
                           "--address", "127.0.0.1:1"], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert proc.returncode == 2
    assert "refusing to listen on 0.0.0.0 without an API token" in proc.stderr
