"""Registry, envelope and noop: the contract every tool shares."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest

from noetl_temporal.errors import ToolConfigError, ToolError
from noetl_temporal.tools import TOOLS, ToolCall, get_tool, register_tool, run_tool, to_jsonable


def test_builtin_kinds_registered() -> None:
    assert {"noop", "python", "shell", "http"} <= set(TOOLS)
    assert get_tool("python").kind == "python"


def test_unknown_kind_names_known_kinds() -> None:
    with pytest.raises(ToolConfigError) as info:
        get_tool("snowflake")
    assert "snowflake" in str(info.value)
    for kind in ("http", "noop", "python", "shell"):
        assert kind in str(info.value)


async def test_run_tool_unknown_kind_is_an_error_outcome(call: ToolCall) -> None:
    out = await run_tool("snowflake", {}, call)
    assert out["status"] == "error"
    assert out["error"]["kind"] == "config"
    assert out["error"]["retryable"] is False
    assert "known kinds" in out["error"]["message"]


async def test_envelope_shape(call: ToolCall) -> None:
    call.attempt = 3
    out = await run_tool("noop", {"result": {"a": 1}}, call)
    assert out["status"] == "ok"
    assert out["result"] == {"a": 1}
    assert out["error"] is None
    meta = out["meta"]
    assert meta["attempt"] == 3
    assert isinstance(meta["duration_ms"], int) and meta["duration_ms"] >= 0
    assert meta["started_at"].endswith("Z")
    started = dt.datetime.fromisoformat(meta["started_at"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - started).total_seconds()) < 60
    json.dumps(out)  # serializable as is


async def test_noop_variants(call: ToolCall) -> None:
    assert (await run_tool("noop", {}, call))["result"] is None
    assert (await run_tool("noop", None, call))["result"] is None  # type: ignore[arg-type]
    assert (await run_tool("noop", {"result": None}, call))["result"] is None
    out = await run_tool("noop", {"input": {"a": 1, "b": 1}, "args": {"b": 2}}, call)
    assert out["result"] == {"a": 1, "b": 2}


async def test_non_mapping_config_is_config_error(call: ToolCall) -> None:
    out = await run_tool("noop", ["not", "a", "dict"], call)  # type: ignore[arg-type]
    assert out["error"]["kind"] == "config"


class _Custom:
    kind = "test_custom"

    async def run(self, config: dict, call: ToolCall):
        mode = config.get("mode")
        if mode == "crash":
            raise RuntimeError("boom")
        if mode == "tool_error":
            raise ToolError("slow down", kind="rate_limit", retryable=True, code=429,
                            details={"retry_after": 3.0, "other": "x"})
        if mode == "sleep":
            await asyncio.sleep(30)
        return {"when": dt.datetime(2024, 1, 2, tzinfo=dt.UTC), "tags": {"a"}, (1, 2): "tuple key"}


@pytest.fixture
def custom_tool():
    tool = register_tool(_Custom())
    yield tool
    TOOLS.pop(tool.kind, None)


async def test_custom_tool_result_is_made_jsonable(call: ToolCall, custom_tool) -> None:
    out = await run_tool("test_custom", {}, call)
    assert out["status"] == "ok"
    assert out["result"] == {"when": "2024-01-02 00:00:00+00:00", "tags": ["a"], "(1, 2)": "tuple key"}


async def test_unexpected_exception_is_internal(call: ToolCall, custom_tool) -> None:
    out = await run_tool("test_custom", {"mode": "crash"}, call)
    err = out["error"]
    assert out["status"] == "error"
    assert err["kind"] == "internal" and err["retryable"] is False
    assert err["message"] == "RuntimeError: boom"
    assert "Traceback" not in err["message"]
    assert "RuntimeError: boom" in err["details"]["traceback"]


async def test_tool_error_fields_and_promoted_retry_after(call: ToolCall, custom_tool) -> None:
    out = await run_tool("test_custom", {"mode": "tool_error"}, call)
    err = out["error"]
    assert (err["kind"], err["retryable"], err["code"], err["message"]) == ("rate_limit", True, 429, "slow down")
    assert err["retry_after"] == 3.0
    assert err["details"] == {"other": "x"}


async def test_cancellation_propagates(call: ToolCall, custom_tool) -> None:
    task = asyncio.ensure_future(run_tool("test_custom", {"mode": "sleep"}, call))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_register_tool_rejects_missing_kind() -> None:
    class NoKind:
        async def run(self, config, call):
            return None

    with pytest.raises(ValueError):
        register_tool(NoKind())  # type: ignore[arg-type]


def test_to_jsonable_edge_cases() -> None:
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert to_jsonable(cyclic) == [1, "<cycle>"]
    assert to_jsonable({1: "a", None: "b"}) == {"1": "a", "null": "b"}
    assert to_jsonable(b"bytes") == "bytes"
    assert to_jsonable((1, 2)) == [1, 2]


@pytest.mark.parametrize("value", [
    {"i": 2}, [1, [2.5, [None, True]]], {"x": -0.0, "big": 10**30, "s": "\ud800"}, [float("nan")], {"inf": float("inf")},
    {1: 2}, {"t": (1,)}, {"many": list(range(200))}, "text", 7, None, {"sub": type("S", (str,), {})("x")},
])
def test_to_jsonable_is_the_json_round_trip(value: object) -> None:
    got, expected = to_jsonable(value), json.loads(json.dumps(value, default=str))
    assert json.dumps(got) == json.dumps(expected) and type(got) is type(expected)


def test_to_jsonable_copies_containers() -> None:
    value = {"a": [1, {"b": 2}]}
    got = to_jsonable(value)
    got["a"][1]["b"] = 3
    assert value == {"a": [1, {"b": 2}]}
