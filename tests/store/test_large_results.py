"""Result references: stores, select/preview, resolution, the ``result`` tool, and the
activity's preparation (secrets in, refs resolved, secrets scrubbed, large results out)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from noetl_temporal.attempt import execute
from noetl_temporal.engine.messages import RunTask
from noetl_temporal.store import large_results
from noetl_temporal.tools import ToolCall, run_tool
from tests.support import postgres as pg


@pytest.fixture(autouse=True)
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results"
    monkeypatch.setenv("NOETL_STORE", tmp_path.as_uri())
    monkeypatch.delenv("NOETL_INLINE_MAX_BYTES", raising=False)
    return root


def outcome_of(value) -> dict:
    return {"status": "ok", "result": value, "error": None, "meta": {"attempt": 1}}


def test_small_results_stay_inline() -> None:
    out = large_results.externalize(outcome_of({"a": 1}), {}, execution_id="exec-1", task_run_id="s:run:1:task:t:1",
                              attempt=1)
    assert out["result"] == {"a": 1} and "result_ref" not in out


def test_large_result_goes_to_the_fs_store(store_dir: Path) -> None:
    value = {"items": [{"id": i, "name": f"n{i}"} for i in range(20000)], "total": 20000}
    out = large_results.externalize(outcome_of(value),
                              {"select": {"total": "total", "first": "items.0.name", "n": "{{ items | length }}",
                                          "bare": "items | length"},
                               "preview": 50},
                              execution_id="exec-1", task_run_id="s:run:1:task:t:1", attempt=2)
    ref = out["result"]
    assert out["result_ref"] == ref
    assert ref["kind"] == "result_ref" and ref["store"] == "fs"
    assert ref["ref"] == "noetl://fs/exec-1/s:run:1:task:t:1-2.json"
    path = store_dir / "exec-1" / "s:run:1:task:t:1-2.json"
    body = path.read_bytes()
    assert ref["meta"] == {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest(),
                           "content_type": "application/json"}
    assert ref["meta"]["bytes"] > large_results.DEFAULT_INLINE_MAX_BYTES
    assert ref["extracted"] == {"total": 20000, "first": "n0", "n": 20000, "bare": 20000}
    assert ref["preview"] == json.dumps(value)[:50]
    assert len(json.dumps(ref)) < 1000
    assert large_results.resolve_ref(ref) == value
    assert large_results.resolve_ref(ref["ref"]) == value
    # tampering is detected
    path.write_bytes(body.replace(b'"n0"', b'"XX"'))
    with pytest.raises(large_results.ResultRefError, match="sha256"):
        large_results.resolve_ref(ref)


def test_thresholds_and_preview() -> None:
    small = {"x": "y" * 100}
    assert large_results.externalize(outcome_of(small), {"inline_max_bytes": 10}, execution_id="e", task_run_id="t",
                               attempt=1)["result"]["kind"] == "result_ref"
    assert large_results.make_preview(list(range(100)), True) == list(range(10))
    assert large_results.make_preview("abcdef", 3) == "abc"
    assert large_results.make_preview("abc", None) is None


def test_malformed_and_unknown_refs() -> None:
    for bad in ("noetl://fs/../etc/passwd", "noetl://fs/exec-1/../../x", "noetl://s3/a/b", "http://x"):
        with pytest.raises(large_results.ResultRefError):
            large_results.resolve_ref(bad)
    with pytest.raises(large_results.ResultRefError, match="not found"):
        large_results.resolve_ref("noetl://fs/exec-1/missing.json")


async def test_resolve_refs_in_a_config() -> None:
    value = ["x" * 300_000]
    ref = large_results.externalize(outcome_of(value), {}, execution_id="e", task_run_id="t", attempt=1)["result"]
    config = {"input": {"doc": ref, "again": [ref], "n": 1}, "plain": {"kind": "result_ref"}}
    resolved = await large_results.resolve_refs(config)
    assert resolved["input"] == {"doc": value, "again": [value], "n": 1}
    assert resolved["plain"] == {"kind": "result_ref"}  # not a reference: no noetl:// ref


async def test_a_stored_result_keeps_the_named_fields_and_a_part_reference_reads_its_part(call: ToolCall) -> None:
    value = {"count": 2, "data": {"rows": [{"id": 1}, {"id": 2}]}, "blob": "z" * 300_000}
    spec = {"keep": ["count", "data.rows.1.id", "data.rows", "nope"]}
    ref = large_results.externalize(outcome_of(value), spec, execution_id="e", task_run_id="t", attempt=1)["result"]
    assert ref["fields"] == {"count": 2, "data.rows.1.id": 2, "data.rows": [{"id": 1}, {"id": 2}]}
    assert ref["absent"] == ["nope"] and ref["omitted"] == {}
    part = {k: ref[k] for k in ("kind", "ref", "store", "meta")} | {"path": ["data", "rows", "0"]}
    assert await large_results.resolve_refs({"first": part}) == {"first": {"id": 1}}
    assert (await run_tool("result", {"ref": part}, call))["result"] == {"id": 1}
    plain = large_results.externalize(outcome_of(value), {}, execution_id="e", task_run_id="t", attempt=2)["result"]
    assert "fields" not in plain  # no `keep` (an execution from before): the reference as it was


async def test_result_tool(call: ToolCall) -> None:
    value = {"data": {"rows": [{"id": 1}, {"id": 2}]}, "blob": "z" * 300_000}
    ref = large_results.externalize(outcome_of(value), {}, execution_id="e", task_run_id="t", attempt=1)["result"]
    whole = await run_tool("result", {"ref": ref}, call)
    assert whole["status"] == "ok" and whole["result"] == value
    picked = await run_tool("result", {"ref": ref["ref"], "select": {"ids": "data.rows", "n": "data.rows | length"}},
                            call)
    assert picked["result"] == {"ids": [{"id": 1}, {"id": 2}], "n": 2}
    passthrough = await run_tool("result", {"ref": {"small": True}, "select": {"s": "small"}}, call)
    assert passthrough["result"] == {"s": True}
    missing = await run_tool("result", {"ref": "noetl://fs/e/none.json"}, call)
    assert missing["error"]["kind"] == "result_ref"
    assert (await run_tool("result", {}, call))["error"]["kind"] == "config"


async def test_postgres_result_store(monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = pg.require_dsn()
    monkeypatch.setenv("NOETL_STORE", dsn)
    value = {"blob": "p" * 300_000}
    out = large_results.externalize(outcome_of(value), {"store": "postgres"}, execution_id="exec-pg",
                              task_run_id=pg.unique_name("ref"), attempt=1)
    ref = out["result"]
    assert ref["store"] == "postgres" and ref["ref"].startswith("noetl://postgres/exec-pg/")
    try:
        assert large_results.resolve_ref(ref) == value
    finally:
        pg.execute(dsn, f"DELETE FROM noetl_result_store WHERE ref = '{ref['ref']}'")
    monkeypatch.delenv("NOETL_STORE")
    with pytest.raises(Exception, match="NOETL_STORE to a postgresql:// URL"):
        large_results.check_result_spec({"store": "postgres"})


# ----------------------------------------------------------- the activity's preparation


async def execute_json(cmd: RunTask, call: ToolCall) -> dict:
    """The activity's outcome as it goes on the wire."""
    return (await execute(cmd, call)).to_dict()


def run_task(kind: str, config: dict, **kwargs) -> RunTask:
    return RunTask(task_run_id=kwargs.pop("task_run_id", "s:run:1:task:t:1"), execution_id="exec-act", step="s",
                   step_run_id="s:run:1", task="t", kind=kind, config=config, **kwargs)


async def test_execute_renders_secrets_and_scrubs_them(monkeypatch: pytest.MonkeyPatch, http_server) -> None:
    secret = "tok-" + "9" * 12
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", secret)
    cmd = run_task("http", {"url": http_server.url("/echo"),
                            "headers": {"Authorization": "Bearer {{ keychain.api.token }}", "X-Who": "tester"},
                            "params": {"sig": "{{ who }}-{{ keychain.api.token | length }}"}},
                   secret_context={"who": "tester"}, keychain=[{"name": "api", "kind": "bearer"}])
    call = ToolCall(execution_id="exec-act", step="s", task="t")
    outcome = await execute_json(cmd, call)
    assert outcome["status"] == "ok", outcome
    headers = outcome["result"]["data"]["headers"]
    # a value rendered from a keychain template is secret as a whole
    assert headers["authorization"] == "***" and headers["x-who"] == "tester"
    assert outcome["result"]["data"]["query"] == {"sig": "***"}  # rendered with secret_context: "tester-16"
    assert secret not in json.dumps(outcome)

    leak = run_task("python", {"code": "import os\nprint(os.environ['T'])\nraise ValueError('bad ' + os.environ['T'])",
                               "env": {"T": "{{ keychain.api.token }}"}}, keychain=[{"name": "api"}])
    failed = await execute_json(leak, ToolCall(execution_id="exec-act", step="s", task="t"))
    assert failed["status"] == "error" and "***" in failed["error"]["message"]
    assert secret not in json.dumps(failed)

    missing = await execute_json(run_task("http", {"url": "{{ keychain.nope.url }}"}), call)
    assert missing["error"]["kind"] == "keychain" and "NOETL_KEYCHAIN_NOPE" in missing["error"]["fix"]


async def test_execute_resolves_refs_and_stores_large_results(http_server, store_dir: Path) -> None:
    call = ToolCall(execution_id="exec-act", step="s", task="t")
    fetched = await execute_json(run_task("http", {"url": http_server.url("/big?bytes=600000&json=1")},
                                     result_spec={"select": {"n": "data.blob | length"}}), call)
    ref = fetched["result_ref"]
    assert fetched["result"] == ref and ref["extracted"] == {"n": 600000}
    assert len(json.dumps(fetched)) < 4000
    assert (store_dir / "exec-act").is_dir()
    used = await execute_json(run_task("python", {"input": {"doc": ref}, "code": "result = len(doc['data']['blob'])"},
                                  task_run_id="s:run:1:task:u:1"), call)
    assert used["status"] == "ok" and used["result"] == 600000
    # the result kind reads the reference itself
    picked = await execute_json(run_task("result", {"ref": ref, "select": {"status": "status"}}), call)
    assert picked["result"] == {"status": 200}
    bad_store = await execute_json(run_task("noop", {"result": 1}, result_spec={"store": "nowhere"}), call)
    assert bad_store["error"]["kind"] == "config"


# ----------------------------------------------------------- the cheap inline check

@pytest.mark.parametrize(("value", "limit", "expected"), [
    (None, 10, True), (True, 10, True), (12345, 64, True), ("abc", 64, True),
    ({"i": 1, "xs": [1, 2.5, None, "é"]}, 256, True),
    ("x" * 100, 64, False),                 # 6 bytes a character could exceed it: not sure, so no
    (list(range(300)), 1 << 20, False),     # too many values to walk: let externalize measure
    (10 ** 30, 1 << 20, False),             # a long integer
    ({1: "non-string key"}, 1 << 20, False),
    ((1, 2), 1 << 20, False),               # not a JSON type: externalize decides
    ({"a": "b"}, 0, False),                 # inline_max_bytes: 0 stores everything
])
def test_surely_inline(value, limit, expected) -> None:
    assert large_results.surely_inline(value, {"inline_max_bytes": limit}) is expected


@pytest.mark.parametrize("value", [
    {"text": "\x00\x01" * 20}, {"k" * 30: ["é" * 10, 1e300, -(10 ** 17)]}, [[[[{"a": None}]]]] * 20, "\n" * 40,
])
def test_surely_inline_never_says_yes_to_a_body_over_the_limit(value) -> None:
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    for limit in range(0, 2 * size + 400, 7):
        if large_results.surely_inline(value, {"inline_max_bytes": limit}):
            assert size <= limit, (limit, size)
    assert large_results.surely_inline(value, {"inline_max_bytes": 1 << 20})
