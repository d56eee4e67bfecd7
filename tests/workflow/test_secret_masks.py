"""Issue 38: secrets the mask should catch, run as playbooks on the dev server.

Each run takes a keychain secret from the environment provider, uses it against the real
loopback HTTP server or in a task's output, and then no piece of the secret, in any form
the project or its HTTP client gives it, may show in the run's ``--json`` report, its
events (as the run saw them and as stored), or its Temporal history.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest

from noetl_temporal.store.event_store import open_event_store

from .test_data_tools import history_as_text

pytestmark = pytest.mark.temporal


def _forms(secret: str) -> list[str]:
    """The secret as it may be written: raw, percent-encoded by each rule we know of (httpx's
    own for a URL it is given, quote, quote_plus), JSON-escaped, as a repr."""
    in_url = str(httpx.URL("http://h/?t=" + secret)).split("?t=", 1)[1]
    return [secret, quote(secret, safe=""), quote_plus(secret), in_url, json.dumps(secret)[1:-1],
            repr(secret)[1:-1]]


def _pieces(secret: str, size: int = 8) -> set[str]:
    """Every ``size``-character piece of every form: a secret cut in two must not show either."""
    return {form[i:i + size] for form in _forms(secret) for i in range(len(form) - size + 1)}


@pytest.fixture(autouse=True)
def result_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results"
    monkeypatch.setenv("NOETL_RESULT_STORE", str(root))
    return root


async def _everything(report: Any, temporal: Any, results: Path) -> str:
    """The report as ``run --json`` prints it, its stored events, its history, its stored results."""
    raw, history_text = await history_as_text(temporal, report.workflow_id)
    stored_results = [p.read_bytes().decode("utf-8", "replace") for p in results.rglob("*") if p.is_file()]
    store = open_event_store()
    try:
        stored = json.dumps(store.read(report.execution_id, limit=100_000), default=str)
    finally:
        store.close()
    return "\n".join([json.dumps(report.to_json(), default=str), str(report.error), stored, raw, history_text,
                      *stored_results])


def _assert_hidden(secret: str, text: str) -> None:
    shown = sorted(piece for piece in _pieces(secret) if piece in text)
    where = [text[max(0, text.index(p) - 60):text.index(p) + 40] for p in shown[:3]]
    assert not shown, f"pieces of the secret showed: {shown[:5]} in {where}"


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A token with what URL encoders disagree on: a space, / : @ ! ( ) * ' ~ + and a non-ASCII letter."""
    value = f"S3cr3t p/a:s@s!(x)*'~+é-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", value)
    return value


async def test_a_secret_in_an_http_query_is_masked_as_the_client_encoded_it(run_yaml, temporal, result_store, http_server,
                                                                            secret: str) -> None:
    report = await run_yaml(f"""
    keychain:
      - {{name: api, kind: bearer}}
    workflow:
      - step: call
        tool:
          - name: in_url
            kind: http
            url: "{http_server.url('/json')}?tok={{{{ keychain.api.token }}}}"
          - name: in_params
            kind: http
            url: "{http_server.url('/json')}"
            params: {{tok: "{{{{ keychain.api.token }}}}"}}
          - name: in_form
            kind: http
            method: POST
            url: "{http_server.url('/echo')}"
            data: {{tok: "{{{{ keychain.api.token }}}}"}}
    """)
    assert report.state == "COMPLETED", report.error
    assert "tok=***" in json.dumps(report.to_json())   # what the client sent, masked, not dropped
    _assert_hidden(secret, await _everything(report, temporal, result_store))


@pytest.mark.parametrize("template", [
    "{{ {keychain.api.token: 1} | xmlattr }}",                 # ValueError quoting the key's repr
    "{{ ('{' ~ keychain.api.token ~ '}').format() }}",          # KeyError: '<the token>'
], ids=["xmlattr", "format"])
async def test_an_error_rendering_a_keychain_template_is_scrubbed(run_yaml, temporal, result_store, http_server,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 template: str) -> None:
    token = f"tk {uuid.uuid4().hex}"   # a space xmlattr refuses; no ':' or '{', so .format() takes it whole
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", token)
    report = await run_yaml(f"""
    keychain:
      - {{name: api, kind: bearer}}
    workflow:
      - step: call
        tool:
          kind: http
          url: "{http_server.url('/json')}"
          headers: {{X-Token: "{template}"}}
    """)
    assert report.state == "FAILED"
    assert "template" in str(report.error)
    _assert_hidden(token, await _everything(report, temporal, result_store))


async def test_output_is_masked_before_it_is_cut(run_yaml, temporal, result_store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Masking shortens text: cut after masking, the kept part reached into the margin kept
    for the mask and showed most of the secret that straddled the cut."""
    token = f"tk-{uuid.uuid4().hex[:15]}"   # 18 characters, as in the issue
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", token)
    report = await run_yaml("""
    keychain:
      - {name: api, kind: bearer}
    workflow:
      - step: out
        tool:
          - name: sh
            kind: shell
            cmd: |
              T='{{ keychain.api.token }}'
              i=0; while [ $i -lt 70000 ]; do echo "$T"; echo "$T" >&2; i=$((i+1)); done
          - name: py
            kind: python
            env: {TOKEN: "{{ keychain.api.token }}"}
            code: |
              import os, sys
              for _ in range(5000):
                  print(os.environ["TOKEN"])
                  print(os.environ["TOKEN"], file=sys.stderr)
              result = 1
    """)
    assert report.state == "COMPLETED", report.error
    text = await _everything(report, temporal, result_store)
    assert text.count("bytes truncated") >= 4     # stdout and stderr of both tasks were cut
    _assert_hidden(token, text)


@pytest.mark.parametrize("task", [
    # a python error message is cut at 2,000 characters: the token straddles the cut
    """{kind: python, env: {TOKEN: "{{ keychain.api.token }}"},
        code: "import os\\nraise ValueError('m' * 1990 + os.environ['TOKEN'] + 'x' * 100)"}""",
    # an HTTP error quotes the first 300 characters of the answer: the token straddles them
    """{kind: http, method: POST, url: "URL/status/404",
        data: {pad: "PAD", tok: "{{ keychain.api.token }}"}}""",
], ids=["python-message", "http-snippet"])
async def test_an_error_message_is_masked_before_it_is_cut(run_yaml, temporal, result_store, http_server,
                                                          monkeypatch: pytest.MonkeyPatch, task: str) -> None:
    token = f"tk-{uuid.uuid4().hex[:15]}"
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", token)
    # "pad=" + 274 + "&tok=": the token starts 17 characters before the cut at 300
    task = task.replace("URL", http_server.url("")).replace("PAD", "x" * 274)
    report = await run_yaml(f"""
    keychain:
      - {{name: api, kind: bearer}}
    workflow:
      - step: fail
        tool: {task}
    """)
    assert report.state == "FAILED", report.error
    text = await _everything(report, temporal, result_store)
    _assert_hidden(token, text)
