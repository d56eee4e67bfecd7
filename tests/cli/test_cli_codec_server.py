"""`noetl-temporal codec-server` as an operator runs it: a playbook runs with an encrypting
codec on the dev server, the codec server runs as a subprocess over the same codec, and
`temporal workflow show --codec-endpoint` (the Temporal CLI, a subprocess) prints plaintext
where without it it prints ciphertext; large payloads stored by the claim check are read back.
The protocol's edges (CORS preflight, namespace, bad bodies) over real HTTP."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client

import noetl_temporal
from noetl_temporal.client.devserver import free_port, temporal_cli_path
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook_text
from tests.support.codec_server import CODEC, CodecServer, environ
from tests.support.user_codec import ENCODING, EncryptingCodec

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
SECRET = "plaintext-marker-4711"

PLAYBOOK = """
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: codec-server-demo}
    workflow:
      - step: greet
        tool: {kind: python, code: "result = {'said': 'hello ' + who}", input: {who: "{{ workload.who }}"}}
    """


@pytest.fixture
def codec_server() -> Iterator[CodecServer]:
    server = CodecServer("--codec", CODEC)
    yield server
    server.stop()


def temporal_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([temporal_cli_path(), *args], capture_output=True, text=True, timeout=120,
                          env=environ())


async def _encrypted_run(temporal, task_queue: str, payload: dict) -> str:
    """A playbook run by a client and worker with the user's encrypting codec; its workflow id."""
    client = await Client.connect(temporal.address, namespace=temporal.namespace,
                                  data_converter=noetl_temporal.data_converter(EncryptingCodec()))
    playbook = load_playbook_text(textwrap.dedent(PLAYBOOK), source="<test>").playbook
    report = await run_with_client(client, playbook, task_queue=task_queue, payload=payload,
                                   execution_timeout_s=60)
    assert report.state == "COMPLETED", report.error
    return report.workflow_id


async def test_temporal_workflow_show_prints_plaintext_through_the_codec_server(temporal, task_queue, codec_server):
    # The input is over the claim check's threshold: history holds a reference to the
    # encrypted payload in the payload store, which the codec server reads back.
    workflow_id = await _encrypted_run(temporal, task_queue, {"who": SECRET, "padding": "p" * 200_000})
    show = ("workflow", "show", "--workflow-id", workflow_id, "--address", temporal.address,
            "--namespace", temporal.namespace, "--output", "json")

    without = temporal_cli(*show)
    assert without.returncode == 0, without.stderr
    assert SECRET not in without.stdout and f"hello {SECRET}" not in without.stdout   # ciphertext only
    encodings = {base64.b64decode(p["metadata"]["encoding"]) for p in _payloads(json.loads(without.stdout))}
    assert {ENCODING, b"noetl/claim-check"} <= encodings   # (search attributes are never encoded)

    through = temporal_cli(*show, "--codec-endpoint", codec_server.url)
    assert through.returncode == 0, through.stderr
    decoded = [base64.b64decode(p.get("data", "")) for p in _payloads(json.loads(through.stdout))]
    assert any(SECRET.encode() in d and b"p" * 1000 in d for d in decoded)   # the claim-checked input
    assert any(f"hello {SECRET}".encode() in d for d in decoded)             # the step's result

    table = temporal_cli(*show[:-2], "--codec-endpoint", codec_server.url)   # the default, human output
    assert table.returncode == 0, table.stderr
    assert f"hello {SECRET}" in table.stdout


def _payloads(value: object) -> Iterator[dict]:
    """Every payload ({metadata, data}) anywhere in a history's JSON."""
    if isinstance(value, dict):
        if "metadata" in value and isinstance(value["metadata"], dict) and "encoding" in value["metadata"]:
            yield value
        for child in value.values():
            yield from _payloads(child)
    elif isinstance(value, list):
        for child in value:
            yield from _payloads(child)


def _body(*payloads: Payload) -> dict:
    return {"payloads": [{"metadata": {k: base64.b64encode(v).decode() for k, v in p.metadata.items()},
                          "data": base64.b64encode(p.data).decode()} for p in payloads]}


async def test_encode_then_decode_round_trips_and_a_bad_payload_stays_as_it_was(codec_server):
    plain = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps({"who": SECRET}).encode())
    encoded = httpx.post(f"{codec_server.url}/encode", json=_body(plain), headers={"X-Namespace": "default"})
    assert encoded.status_code == 200, encoded.text
    [cipher] = encoded.json()["payloads"]
    assert base64.b64decode(cipher["metadata"]["encoding"]) == ENCODING
    assert SECRET.encode() not in base64.b64decode(cipher["data"])

    missing = Payload(metadata={"encoding": b"noetl/claim-check"}, data=b"0" * 64)   # not in the store
    decoded = httpx.post(f"{codec_server.url}/default/decode", json={"payloads": [cipher, *_body(missing)["payloads"]]})
    assert decoded.status_code == 200, decoded.text
    back, kept = decoded.json()["payloads"]
    assert json.loads(base64.b64decode(back["data"])) == {"who": SECRET}
    assert base64.b64decode(kept["data"]) == b"0" * 64   # unreadable: returned as it was, the rest decoded
    assert "is missing from the payload store" in codec_server.stop()   # and the server's log says why


def test_cors_answers_the_uis_preflight_and_only_for_its_origins(codec_server):
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,x-namespace,authorization"}
    for origin in ("http://localhost:8233", "http://127.0.0.1:8233"):   # the dev server's UI, by default
        answer = httpx.options(f"{codec_server.url}/decode", headers={"Origin": origin, **preflight})
        assert answer.status_code == 200, answer.text
        assert answer.headers["access-control-allow-origin"] == origin
        assert answer.headers["access-control-allow-credentials"] == "true"
        assert {"content-type", "x-namespace", "authorization"} <= \
            {h.strip().lower() for h in answer.headers["access-control-allow-headers"].split(",")}
        posted = httpx.post(f"{codec_server.url}/decode", json={"payloads": []}, headers={"Origin": origin})
        assert posted.headers["access-control-allow-origin"] == origin
    other = httpx.options(f"{codec_server.url}/decode", headers={"Origin": "https://elsewhere.example", **preflight})
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    posted = httpx.post(f"{codec_server.url}/decode", json={"payloads": []}, headers={"Origin": "https://elsewhere.example"})
    assert "access-control-allow-origin" not in posted.headers   # the browser withholds the answer


def test_a_namespace_list_refuses_other_namespaces_and_bad_requests_say_why():
    server = CodecServer("--codec", CODEC, "--only-namespace", "payments", "--cors-origin", "https://ui.example")
    try:
        ok = httpx.post(f"{server.url}/decode", json={"payloads": []}, headers={"X-Namespace": "payments"})
        assert ok.status_code == 200 and ok.json() == {}   # protobuf JSON leaves an empty list out
        assert httpx.post(f"{server.url}/payments/decode", json={"payloads": []}).status_code == 200
        refused = httpx.post(f"{server.url}/decode", json={"payloads": []}, headers={"X-Namespace": "hr"})
        assert refused.status_code == 403 and "serves the namespace(s) payments, not 'hr'" in refused.json()["error"]
        bad = httpx.post(f"{server.url}/decode", content=b"{nope", headers={"X-Namespace": "payments"})
        assert bad.status_code == 400 and bad.json()["error"].startswith("the body is not JSON")
        wrong = httpx.post(f"{server.url}/decode", json={"payloads": [{"metadata": "not a map"}]},
                           headers={"X-Namespace": "payments"})
        assert wrong.status_code == 400 and "protobuf JSON" in wrong.json()["error"]
        assert httpx.get(f"{server.url}/decode").status_code == 405
        assert httpx.post(f"{server.url}/elsewhere", json={}).status_code == 404
        preflight = httpx.options(f"{server.url}/decode", headers={
            "Origin": "https://ui.example", "Access-Control-Request-Method": "POST"})
        assert preflight.headers["access-control-allow-origin"] == "https://ui.example"
    finally:
        log = server.stop()
    assert "Traceback" not in log


def test_a_codec_that_does_not_load_is_a_clear_error():
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "codec-server", "--codec", "acme.nowhere:codec",
                           "--port", str(free_port())], cwd=REPO, env=environ(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "acme.nowhere" in proc.stderr and "Traceback" not in proc.stderr


def test_a_port_in_use_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "codec-server", "--port", str(port)],
                              cwd=REPO, env=environ(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"error: cannot listen on 127.0.0.1:{port} (fix: choose another --port or --host)" in proc.stderr
    assert "claim-check references only" in proc.stderr and "Traceback" not in proc.stderr


async def test_payload_store_flag_reads_that_store_without_a_deprecation(tmp_path: Path):
    # A large payload the claim check wrote to a store of its own (a file:// URL, as
    # --payload-store takes): the codec server pointed there reads it back.
    from noetl_temporal.conversion.claimcheck import ClaimCheckCodec

    big = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps({"who": SECRET * 40_000}).encode())
    [ref] = await ClaimCheckCodec(str(tmp_path / "payloads")).encode([big])
    server = CodecServer("--payload-store", (tmp_path / "payloads").as_uri())
    try:
        decoded = httpx.post(f"{server.url}/decode", json=_body(ref), timeout=30)
    finally:
        log = server.stop()
    assert decoded.status_code == 200, decoded.text
    [back] = decoded.json()["payloads"]
    assert base64.b64decode(back["data"]) == big.data
    assert "deprecated" not in log, log
