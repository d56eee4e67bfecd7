"""The http tool against a real HTTP server on 127.0.0.1 (tests/support/http_server.py)."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid

import pytest

from noetl_temporal.tools import ToolCall, aclose_clients, run_tool
from noetl_temporal.tools.http import get_client
from tests.support.http_server import HTTPTestServer


async def http(call: ToolCall, **config) -> dict:
    return await run_tool("http", config, call)


def _key() -> str:
    return uuid.uuid4().hex


async def test_get_json(call: ToolCall, http_server: HTTPTestServer) -> None:
    out = await http(call, url=http_server.url("/json"), params={"page": 2, "flag": True, "skip": None})
    assert out["status"] == "ok", out
    res = out["result"]
    assert res["status"] == res["status_code"] == 200
    assert res["data"] == {"hello": "world", "query": {"page": "2", "flag": "true"}}
    assert res["body"] == res["data"]
    assert res["headers"]["content-type"] == "application/json"
    assert res["url"].startswith(http_server.url("/json"))
    assert isinstance(res["elapsed_ms"], int)
    assert out["http"] == {"status": 200, "headers": res["headers"]}


async def test_text_and_endpoint_alias(call: ToolCall, http_server: HTTPTestServer) -> None:
    out = await http(call, endpoint=http_server.url("/text"))
    assert out["result"]["data"] == "hello text"


async def test_post_json_form_and_raw_bodies(call: ToolCall, http_server: HTTPTestServer) -> None:
    url = http_server.url("/echo")
    out = await http(call, url=url, method="post", json={"a": [1, 2]}, headers={"X-Trace": 7})
    echo = out["result"]["data"]
    assert echo["method"] == "POST" and echo["json"] == {"a": [1, 2]}
    assert echo["headers"]["x-trace"] == "7"

    # a header rendered to a native value is sent as a template prints it (templates.text)
    sent = (await http(call, url=url, headers={"X-On": True, "X-Off": False, "X-Map": {"a": [1, None]},
                                                 "X-None": None}))["result"]["data"]["headers"]
    assert (sent["x-on"], sent["x-off"], sent["x-map"]) == ("true", "false", '{"a": [1, null]}')
    assert "x-none" not in sent

    form = (await http(call, url=url, method="PUT", data={"a": 1, "b": True}))["result"]["data"]
    assert form["body"] == "a=1&b=true"
    assert form["headers"]["content-type"] == "application/x-www-form-urlencoded"

    # NoETL's `form:` (amadeus_ai_api's OAuth token request): form-encoded, null fields left out
    form = (await http(call, url=url, method="POST", form={"grant_type": "client_credentials", "n": 2,
                                                           "skip": None},
                       headers={"Content-Type": "application/x-www-form-urlencoded"}))["result"]["data"]
    assert form["body"] == "grant_type=client_credentials&n=2"
    assert form["headers"]["content-type"] == "application/x-www-form-urlencoded"
    bad = await http(call, url=url, method="POST", form=["a"])
    assert bad["status"] == "error" and "'form' must be a mapping" in bad["error"]["message"]

    as_json = (await http(call, url=url, method="POST", body={"a": 1},
                          headers={"Content-Type": "application/json"}))["result"]["data"]
    assert as_json["json"] == {"a": 1}

    raw = (await http(call, url=url, method="POST", body="plain words"))["result"]["data"]
    assert raw["body"] == "plain words"

    payload = (await http(call, url=url, method="POST", payload={"p": 1}))["result"]["data"]
    assert payload["json"] == {"p": 1}


async def test_500_is_retryable_server_error_with_result(call: ToolCall, http_server: HTTPTestServer) -> None:
    out = await http(call, url=http_server.url("/status/500"))
    assert out["status"] == "error"
    err = out["error"]
    assert (err["kind"], err["retryable"], err["code"]) == ("server_error", True, 500)
    assert "HTTP 500" in err["message"]
    assert out["http"]["status"] == 500
    assert out["result"]["data"] == {"status": 500}  # the body is still there for policies
    assert out["result"]["status_code"] == 500


async def test_429_rate_limit_with_retry_after(call: ToolCall, http_server: HTTPTestServer) -> None:
    out = await http(call, url=http_server.url("/rate-limited?retry_after=3"))
    err = out["error"]
    assert (err["kind"], err["retryable"], err["code"]) == ("rate_limit", True, 429)
    assert err["retry_after"] == 3.0
    assert out["http"]["headers"]["retry-after"] == "3"


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "auth"), (403, "auth"), (404, "not_found"), (400, "client_error"), (422, "client_error")],
)
async def test_4xx_mapping(call: ToolCall, http_server: HTTPTestServer, status: int, kind: str) -> None:
    out = await http(call, url=http_server.url(f"/status/{status}"))
    err = out["error"]
    assert (err["kind"], err["retryable"], err["code"]) == (kind, False, status)
    assert out["http"]["status"] == status


async def test_slow_endpoint_times_out(call: ToolCall, http_server: HTTPTestServer) -> None:
    t0 = time.monotonic()
    out = await http(call, url=http_server.url("/slow?s=30"), timeout=0.3)
    assert time.monotonic() - t0 < 10   # 0.3 s asked, 30 s if ignored (docs/testing.md)
    err = out["error"]
    assert (err["kind"], err["retryable"]) == ("timeout", True)


async def test_read_phase_timeout_in_noetls_shape_fails_a_slow_read(call: ToolCall,
                                                                     http_server: HTTPTestServer) -> None:
    # issue 37: `timeout: {connect, read}` (NoETL's documented shape) bounds each phase
    t0 = time.monotonic()
    out = await http(call, url=http_server.url("/slow?s=30"), timeout={"connect": 5, "read": 0.3})
    assert time.monotonic() - t0 < 10
    err = out["error"]
    assert (err["kind"], err["retryable"]) == ("timeout", True)
    assert "after its read timeout of 0.3 s" in err["message"]
    # a read within the bound succeeds: the phases bound, they do not fail every request
    out = await http(call, url=http_server.url("/slow?s=0.1"), timeout={"connect": 5, "read": 2})
    assert out["status"] == "ok" and out["result"]["data"] == {"slept": 0.1}
    # a number still bounds the whole request
    out = await http(call, url=http_server.url("/slow?s=0.1"), timeout=2)
    assert out["status"] == "ok"


def test_both_phases_reach_httpx_and_stay_within_the_activity_limit(call: ToolCall) -> None:
    from noetl_temporal.tools.http import _timeouts

    call.timeout = 10
    overall, phases = _timeouts({"timeout": {"connect": "2", "read": 30}}, call)
    assert (overall, phases) == (10.0, {"connect": 2.0, "read": 10.0})
    httpx = pytest.importorskip("httpx")
    assert httpx.Timeout(overall, **phases).as_dict() == {"connect": 2.0, "read": 10.0, "write": 10.0,
                                                          "pool": 10.0}


@pytest.mark.parametrize("timeout", [{"connect": 1, "write": 2}, {"read": 0}, {"read": "soon"}])
async def test_a_wrong_phase_timeout_fails_the_task_as_a_config_error(call: ToolCall, timeout) -> None:
    out = await http(call, url="http://127.0.0.1:9/", timeout=timeout)
    assert out["status"] == "error" and out["error"]["retryable"] is False
    assert "timeout" in out["error"]["message"]


async def test_call_timeout_bounds_the_request(call: ToolCall, http_server: HTTPTestServer) -> None:
    call.timeout = 0.3
    out = await http(call, url=http_server.url("/slow?s=3"))
    assert out["error"]["kind"] == "timeout"


async def test_flaky_endpoint_fails_then_succeeds(call: ToolCall, http_server: HTTPTestServer) -> None:
    key = _key()
    url = http_server.url(f"/flaky?key={key}&fail_times=2")
    first, second, third = [await http(call, url=url) for _ in range(3)]
    assert first["error"]["kind"] == second["error"]["kind"] == "server_error"
    assert third["status"] == "ok" and third["result"]["data"] == {"ok": True, "key": key, "hits": 3}
    count = await http(call, url=http_server.url(f"/count?key={key}"))
    assert count["result"]["data"]["hits"] == 3 == http_server.hits(key)


async def test_paged_endpoint(call: ToolCall, http_server: HTTPTestServer) -> None:
    last = await http(call, url=http_server.url("/paged"), params={"page": 4, "size": 10, "total": 35})
    data = last["result"]["data"]
    assert [d["id"] for d in data["data"]] == [31, 32, 33, 34, 35]
    assert data["paging"] == {"hasMore": False, "page": 4, "pageSize": 10, "total": 35}


async def test_connection_refused_is_retryable(call: ToolCall) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again at once: nothing listens there
    out = await http(call, url=f"http://127.0.0.1:{port}/x", timeout=5)
    err = out["error"]
    assert (err["kind"], err["retryable"]) == ("connection", True)
    assert out["result"] is None


@pytest.mark.parametrize("url", ["not a url", "ftp://example.com/x", "http://"])
async def test_invalid_url_is_config_error(call: ToolCall, url: str) -> None:
    out = await http(call, url=url)
    assert out["error"]["kind"] == "config", out["error"]
    assert out["error"]["retryable"] is False


async def test_missing_url_is_config_error(call: ToolCall) -> None:
    out = await http(call, method="GET")
    assert out["error"]["kind"] == "config"


async def test_redirects(call: ToolCall, http_server: HTTPTestServer) -> None:
    followed = await http(call, url=http_server.url("/redirect?to=/json"))
    assert followed["status"] == "ok" and followed["result"]["url"].endswith("/json")
    not_followed = await http(call, url=http_server.url("/redirect?to=/json"), follow_redirects=False)
    assert not_followed["error"]["kind"] == "redirect"
    assert not_followed["http"]["headers"]["location"] == "/json"


async def test_big_response(call: ToolCall, http_server: HTTPTestServer) -> None:
    out = await http(call, url=http_server.url("/big?bytes=1000000"))
    assert out["status"] == "ok"
    assert len(out["result"]["data"]) == 1_000_000
    as_json = await http(call, url=http_server.url("/big?bytes=1000&json=1"))
    assert as_json["result"]["data"] == {"blob": "x" * 1000}


async def test_client_is_pooled_and_concurrency_safe(call: ToolCall, http_server: HTTPTestServer) -> None:
    assert get_client() is get_client()
    assert get_client(False) is not get_client()
    key = _key()
    outs = await asyncio.gather(*[
        http(call, url=http_server.url(f"/json?key={key}&i={i}")) for i in range(60)
    ])
    assert all(o["status"] == "ok" for o in outs)
    assert sorted(int(o["result"]["data"]["query"]["i"]) for o in outs) == list(range(60))
    assert http_server.hits(key) == 60


async def test_aclose_clients(call: ToolCall, http_server: HTTPTestServer) -> None:
    client = get_client()
    await aclose_clients()
    assert client.is_closed
    # the next call gets a fresh client
    out = await http(call, url=http_server.url("/json"))
    assert out["status"] == "ok"
    assert get_client() is not client
