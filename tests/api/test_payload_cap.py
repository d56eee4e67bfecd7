"""Issue 38: a payload the workflow could not decode inside one activation (10M items, 88 MB,
stayed PENDING forever) is refused where it enters, with its size limit and the fix: the CLI
(``run --payload``/``--set``, before any server starts), the API (``POST /executions``: 413,
before Temporal sees it) and ``start_execution`` (for library callers)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine.payload_size import MAX_PAYLOAD_SIZE, payload_refusal
from noetl_temporal.errors import PayloadTooLarge

from .conftest import app_client, make_settings, playbook

REPO = Path(__file__).resolve().parents[2]
HELLO = playbook("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: hello_cap}
    workflow:
      - step: start
        tool: {kind: noop}
    """)
TOO_MANY = [0] * (MAX_PAYLOAD_SIZE + 1000)


def test_the_cap_counts_items_and_characters():
    assert payload_refusal({"a": [0] * 1000, "s": "x" * 100_000}) is None
    assert "limit MAX_PAYLOAD_SIZE" in payload_refusal({"a": TOO_MANY})
    assert "limit MAX_PAYLOAD_SIZE" in payload_refusal({"s": "x" * (MAX_PAYLOAD_SIZE + 1)})


def test_the_cli_refuses_a_huge_payload_before_it_starts_anything(tmp_path):
    book = tmp_path / "p.yaml"
    book.write_text(HELLO)
    data = tmp_path / "payload.json"
    data.write_text(json.dumps({"rows": TOO_MANY}))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(book), "--payload", f"@{data}"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"--payload/--set holds more than {MAX_PAYLOAD_SIZE:,} characters or items (limit MAX_PAYLOAD_SIZE" \
        in proc.stderr, proc.stderr
    assert "by reference" in proc.stderr
    assert time.monotonic() - started < 60


async def test_the_api_answers_413_before_temporal(temporal, task_queue, catalog, event_store):
    settings = make_settings(temporal, task_queue, catalog, event_store, max_body_bytes=64 * 1024 * 1024)
    async with app_client(settings) as http:
        refused = await http.post("/executions", json={"playbook": HELLO, "payload": {"rows": TOO_MANY}})
        assert refused.status_code == 413, refused.text[:500]
        assert "the request's payload holds more than" in refused.json()["detail"]
        assert "MAX_PAYLOAD_SIZE" in refused.json()["detail"]


async def test_start_execution_refuses_it_with_a_typed_error(temporal, task_queue):
    loaded = load_playbook_text(HELLO, "<test>")
    with pytest.raises(PayloadTooLarge, match="limit MAX_PAYLOAD_SIZE") as caught:
        await start_execution(temporal.client, loaded.playbook, payload={"rows": TOO_MANY}, task_queue=task_queue,
                              execution_timeout_s=30)
    assert caught.value.fix and "by reference" in caught.value.fix
