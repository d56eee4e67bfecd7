"""The nats and subscription tools against a real NATS server with JetStream
(tests/support/nats_server.py: Debian's nats-server, `nats-server -js`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from noetl_temporal.tools import ToolCall, run_tool
from tests.support import nats_server


@pytest.fixture
def nats_url() -> str:
    return nats_server.require_url()


@pytest.fixture
def ncall(call: ToolCall, nats_url: str) -> ToolCall:
    call.keychain = {"nats_credential": {"url": nats_url}}
    return call


@pytest.fixture
async def client(nats_url: str) -> AsyncIterator:
    import nats

    nc = await nats.connect(nats_url)
    yield nc
    await nc.close()


async def nats(call: ToolCall, **config) -> dict:
    config.setdefault("auth", "nats_credential")
    return await run_tool("nats", config, call)


async def test_kv_put_get_keys_delete_round_trip(ncall: ToolCall, client) -> None:
    bucket = nats_server.unique("kv")
    await client.jetstream().create_key_value(bucket=bucket)
    try:
        value = {"session_token": "t1", "user_id": 1, "is_active": True}
        put = await nats(ncall, operation="kv_put", bucket=bucket, key="s1", value=value)
        assert put["status"] == "ok", put
        assert put["result"] == {"status": "success", "bucket": bucket, "key": "s1", "revision": 1}
        got = (await nats(ncall, operation="kv_get", bucket=bucket, key="s1"))["result"]
        assert got["status"] == "success" and got["value"] == value and got["revision"] == 1
        await nats(ncall, operation="kv_put", bucket=bucket, key="other", value="plain text")
        keys = (await nats(ncall, operation="kv_keys", bucket=bucket, pattern="s*"))["result"]
        assert keys["keys"] == ["s1"] and keys["count"] == 1
        assert (await nats(ncall, operation="kv_get", bucket=bucket, key="other"))["result"]["value"] == "plain text"
        assert (await nats(ncall, operation="kv_delete", bucket=bucket, key="s1"))["status"] == "ok"
        gone = (await nats(ncall, operation="kv_get", bucket=bucket, key="s1"))["result"]
        assert gone == {"status": "not_found", "bucket": bucket, "key": "s1", "value": None}
    finally:
        await client.jetstream().delete_key_value(bucket)


async def test_publish_reaches_a_subscriber_and_request_gets_the_reply(ncall: ToolCall, client) -> None:
    subject = nats_server.unique("orders")
    seen: list[bytes] = []

    async def reply(msg) -> None:
        seen.append(msg.data)
        if msg.reply:
            await msg.respond(b'{"echo": ' + msg.data + b"}")

    await client.subscribe(subject, cb=reply)
    await client.flush()
    pub = await nats(ncall, operation="publish", subject=subject, data={"id": 7})
    assert pub["status"] == "ok" and pub["result"]["bytes"] == len(b'{"id":7}'), pub
    req = await nats(ncall, operation="request", subject=subject, data={"id": 8}, timeout_ms=3000)
    assert req["status"] == "ok", req
    assert req["result"]["data"] == {"echo": {"id": 8}}
    for _ in range(50):
        if len(seen) == 2:
            break
        await asyncio.sleep(0.05)
    assert seen == [b'{"id":7}', b'{"id":8}']


async def test_request_without_responders_is_a_retryable_error(ncall: ToolCall) -> None:
    out = await nats(ncall, operation="request", subject=nats_server.unique("nobody"), data="x", timeout_ms=500)
    assert out["status"] == "error"
    assert out["error"]["kind"] == "nats" and out["error"]["retryable"] is True
    assert out["error"]["code"] in ("NoRespondersError", "TimeoutError")


async def _stream_with_consumer(client, count: int, size: int = 10) -> tuple[str, str, str]:
    from nats.js.api import ConsumerConfig

    js = client.jetstream()
    stream, subject, consumer = nats_server.unique("S"), nats_server.unique("s"), "drain"
    await js.add_stream(name=stream, subjects=[subject])
    await js.add_consumer(stream, ConsumerConfig(durable_name=consumer, ack_wait=30))
    for i in range(count):
        await js.publish(subject, (f'{{"n": {i}, "pad": "' + "x" * size + '"}').encode())
    return stream, subject, consumer


async def test_js_publish_then_a_bounded_drain_by_count_bytes_and_time(ncall: ToolCall, client) -> None:
    stream, subject, consumer = await _stream_with_consumer(client, 0)
    try:
        for i in range(7):
            pub = (await nats(ncall, operation="js_publish", subject=subject, data={"n": i}))["result"]
            assert pub["stream"] == stream and pub["seq"] == i + 1 and pub["duplicate"] is False
        first = (await nats(ncall, operation="js_consume", stream=stream, consumer=consumer, batch=3))["result"]
        assert first["count"] == 3 and [m["data"] for m in first["messages"]] == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert first["messages"][0]["stream_seq"] == 1 and first["acked"] is True
        # every payload is 7 bytes ({"n":3}): a 10-byte budget stops after the second message
        by_bytes = (await nats(ncall, operation="js_consume", stream=stream, consumer=consumer,
                               max_bytes=10))["result"]
        assert [m["data"]["n"] for m in by_bytes["messages"]] == [3, 4]
        rest = (await nats(ncall, operation="js_consume", stream=stream, consumer=consumer, batch=100))["result"]
        assert [m["data"]["n"] for m in rest["messages"]] == [5, 6]
        started = time.monotonic()
        out = await nats(ncall, operation="js_consume", stream=stream, consumer=consumer, timeout_ms=300)
        assert out["status"] == "ok", out
        assert out["result"]["count"] == 0 and out["result"]["messages"] == []
        assert time.monotonic() - started < 5  # bounded: the timeout, not a wait for messages
        info = (await nats(ncall, operation="js_stream_info", stream=stream))["result"]
        assert info["state"]["messages"] == 7 and info["config"]["subjects"] == [subject]
        last = (await nats(ncall, operation="js_get_msg", stream=stream, last=True))["result"]
        assert last["seq"] == 7 and last["data"] == {"n": 6}
    finally:
        await client.jetstream().delete_stream(stream)


async def test_drain_of_a_missing_consumer_names_it(ncall: ToolCall, client) -> None:
    stream, _subject, _consumer = await _stream_with_consumer(client, 0)
    try:
        out = await nats(ncall, operation="js_consume", stream=stream, consumer="nope")
        assert out["status"] == "error" and "consumer 'nope'" in out["error"]["message"]
        assert "nats consumer add" in out["error"]["fix"]
    finally:
        await client.jetstream().delete_stream(stream)


async def test_subscription_source_nats_polls_and_manual_ack_leaves_messages_pending(
        ncall: ToolCall, client) -> None:
    stream, _subject, consumer = await _stream_with_consumer(client, 3)
    try:
        config = {"source": "nats", "operation": "poll", "auth": "nats_credential", "stream": stream,
                  "consumer": consumer, "batch": 50, "timeout_ms": 500}
        manual = (await run_tool("subscription", {**config, "ack": "manual"}, ncall))["result"]
        assert manual["count"] == 3 and manual["acked"] is False and manual["ack_mode"] == "manual"
        info = await client.jetstream().consumer_info(stream, consumer)
        assert info.num_ack_pending == 3
        out = await run_tool("subscription", {**config, "source": "kafka"}, ncall)
        assert out["status"] == "error" and "Kafka broker" in out["error"]["message"]
    finally:
        await client.jetstream().delete_stream(stream)
    stream, _subject, consumer = await _stream_with_consumer(client, 2)
    try:
        polled = (await run_tool("subscription", {**config, "stream": stream, "consumer": consumer}, ncall))["result"]
        assert polled["count"] == 2 and polled["acked"] is True and polled["source"] == "nats"
        assert [m["id"] for m in polled["messages"]] == ["1", "2"]
        assert (await client.jetstream().consumer_info(stream, consumer)).num_ack_pending == 0
    finally:
        await client.jetstream().delete_stream(stream)


async def test_object_store_put_get_list(ncall: ToolCall, client) -> None:
    bucket = nats_server.unique("obj")
    await client.jetstream().create_object_store(bucket)
    try:
        put = (await nats(ncall, operation="object_put", bucket=bucket, name="a.txt", data="hello"))["result"]
        assert put["size"] == 5
        got = (await nats(ncall, operation="object_get", bucket=bucket, name="a.txt", encoding="base64"))["result"]
        assert got["data"] == "aGVsbG8=" and got["size"] == 5
        listed = (await nats(ncall, operation="object_list", bucket=bucket))["result"]
        assert [o["name"] for o in listed["objects"]] == ["a.txt"]
    finally:
        await client.jetstream().delete_object_store(bucket)


async def test_connection_errors_say_what_is_missing(call: ToolCall) -> None:
    out = await run_tool("nats", {"operation": "publish", "subject": "x", "auth": "nope"}, call)
    assert out["status"] == "error" and "'nope' is not a resolved keychain entry" in out["error"]["message"]
    call.keychain = {"c": {"user": "u"}}
    out = await run_tool("nats", {"operation": "publish", "subject": "x", "auth": "c"}, call)
    assert out["status"] == "error" and "has no server" in out["error"]["message"]
    # a port nothing listens on: retryable, so the task's retry policy may wait for the server
    out = await run_tool("nats", {"operation": "publish", "subject": "x", "url": "nats://127.0.0.1:1",
                                  "timeout": 1}, call)
    assert out["status"] == "error" and out["error"]["retryable"] is True
    assert "cannot connect to nats://127.0.0.1:1" in out["error"]["message"]
