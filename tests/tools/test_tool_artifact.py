"""``kind: artifact`` (tools/artifact.py): NoETL's `get` and `put` shapes on real files and a
real file result store, and the refusal of a cloud URI (NTL345 at validation, here at run time)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from noetl_temporal.errors import ToolConfigError, ToolError
from noetl_temporal.store import large_results
from noetl_temporal.tools import ToolCall
from noetl_temporal.tools.artifact import ArtifactTool, local_path


async def run(config: dict, call: ToolCall) -> dict:
    return await ArtifactTool().run(config, call)


async def test_put_then_get_round_trips_a_gzipped_file(tmp_path: Path, call: ToolCall) -> None:
    data = {"rows": [{"id": i} for i in range(50)], "status": "ok"}
    put = await run({"action": "put", "uri": f"artifact://localfs{tmp_path}/run/out.json", "data": data}, call)
    text = json.dumps(data, indent=2)
    assert put["status"] == "success" and put["compressed"] is True
    assert put["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert put["uri"] == f"artifact://localfs{tmp_path}/run/out.json.gz"  # the file's own uri: `.gz` added
    assert json.loads(gzip.decompress((tmp_path / "run/out.json.gz").read_bytes())) == data
    got = await run({"action": "get", "input": {"uri": put["uri"]}}, call)
    assert (got["status"], got["data"], got["compressed"]) == ("success", data, True)


async def test_put_without_compression_writes_plain_json_under_input(tmp_path: Path, call: ToolCall) -> None:
    target = tmp_path / "plain.json"
    put = await run({"action": "put", "compress": False, "input": {"uri": f"file://{target}", "data": [1, 2]}}, call)
    assert put["uri"] == f"artifact://localfs{target}" and not put["compressed"]
    assert json.loads(target.read_text()) == [1, 2]


async def test_get_of_a_stored_result_puts_the_body_under_data(tmp_path: Path, call: ToolCall,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOETL_RESULT_STORE", str(tmp_path / "results"))
    body = {"items": list(range(5000))}
    ref = large_results.externalize({"result": body}, {"inline_max_bytes": 10, "keep": ["_store", "_size_bytes"]},
                                    execution_id="e1", task_run_id="t1", attempt=1)["result"]
    assert ref["fields"]["_store"] == "disk" and ref["fields"]["_size_bytes"] == ref["meta"]["bytes"]
    got = await run({"action": "get", "input": {"result_ref": ref}}, call)
    assert got == {"status": "success", "data": body, "uri": ref["ref"], "source": "result_store"}
    assert (await run({"kind": "artifact", "result_ref": ref["ref"]}, call))["data"] == body


@pytest.mark.parametrize("uri, service", [("s3://bucket/a.json", "Amazon S3"), ("gs://b/a.json", "Google Cloud")])
async def test_a_cloud_uri_is_refused_naming_the_service(uri: str, service: str, call: ToolCall) -> None:
    with pytest.raises(ToolConfigError, match=service):
        await run({"action": "put", "uri": uri, "data": {}}, call)


async def test_what_is_missing_is_said(tmp_path: Path, call: ToolCall) -> None:
    with pytest.raises(ToolConfigError, match="no `result_ref` or `uri`"):
        await run({"action": "get", "input": {"result_ref": ""}}, call)
    with pytest.raises(ToolConfigError, match="no `data`"):
        await run({"action": "put", "uri": str(tmp_path / "x.json")}, call)
    with pytest.raises(ToolError, match="not found"):
        await run({"action": "get", "uri": str(tmp_path / "absent.json")}, call)
    with pytest.raises(ToolConfigError, match="not one NoETL has"):
        await run({"action": "delete"}, call)


def test_uris_read_as_noetl_reads_them() -> None:
    assert local_path("artifact://localfs/tmp/a.json") == "/tmp/a.json"
    assert local_path("file:///tmp/b.json") == "/tmp/b.json"
    assert local_path("/tmp/c.json") == "/tmp/c.json"
