"""One store URL (``$NOETL_STORE``) for payloads, results and events, and the settings from
before still working with their deprecation warning (docs/deployment.md)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from noetl_temporal.conversion.claimcheck import ClaimCheckCodec
from noetl_temporal.errors import ConfigError
from noetl_temporal.store import large_results, open_event_store
from noetl_temporal.store.blobs import parse_store_url

OLD = ("NOETL_PAYLOAD_STORE", "NOETL_EVENT_STORE", "NOETL_RESULT_STORE", "NOETL_RESULT_STORE_KIND",
       "NOETL_RESULT_STORE_DSN")


@pytest.fixture(autouse=True)
def _no_old_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OLD:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("NOETL_INLINE_MAX_BYTES", raising=False)


def test_url_forms() -> None:
    assert parse_store_url("file:///srv/noetl").path == Path("/srv/noetl")
    assert parse_store_url("file://localhost/srv/a%20b").path == Path("/srv/a b")
    assert parse_store_url("/srv/noetl").path == Path("/srv/noetl")
    assert parse_store_url("postgresql://u:p@h/db").dsn == "postgresql://u:p@h/db"
    assert parse_store_url("postgres://h/db").kind == "postgres"
    for bad, says in (("s3://bucket/prefix", "not supported yet"), ("http://x/y", "not a store URL"),
                      ("file://otherhost/dir", "local directory"), ("", "not a store URL")):
        with pytest.raises(ConfigError, match=says) as caught:
            parse_store_url(bad)
        assert "NOETL_STORE" in str(caught.value.fix)


def _big() -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * 200_000 + b'"')


def _event(execution_id: str) -> dict:
    return {"execution_id": execution_id, "event_id": "e1", "seq": 1, "event_type": "playbook.started",
            "timestamp": "2026-01-01T00:00:00Z"}


def _outcome() -> dict:
    return {"status": "ok", "result": {"blob": "r" * 300_000}, "error": None, "meta": {"attempt": 1}}


def test_file_url_holds_all_three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOETL_STORE", tmp_path.as_uri())
    codec = ClaimCheckCodec()
    [ref] = asyncio.run(codec.encode([_big()]))
    assert (tmp_path / "payloads" / ref.data.decode()[:2] / ref.data.decode()).exists()
    assert asyncio.run(codec.decode([ref]))[0].data == _big().data

    store = open_event_store()
    try:
        store.write([_event("exec-file")])
        assert store.url == str(tmp_path / "events.db")
        assert store.read("exec-file")[0]["event_type"] == "playbook.started"
    finally:
        store.close()

    out = large_results.externalize(_outcome(), None, execution_id="exec-file", task_run_id="t", attempt=1)
    assert out["result"]["store"] == "fs"
    assert (tmp_path / "results" / "exec-file" / "t-1.json").exists()
    assert large_results.resolve_ref(out["result"]) == _outcome()["result"]


def _in_schema(dsn: str, schema: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"


def test_postgres_url_holds_all_three(pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    url = _in_schema(pg_dsn, pg_schema)
    monkeypatch.setenv("NOETL_STORE", url)
    codec = ClaimCheckCodec()
    [ref] = asyncio.run(codec.encode([_big()]))
    assert asyncio.run(codec.decode([ref]))[0].data == _big().data

    store = open_event_store()
    try:
        store.write([_event("exec-pg")])
        assert [e["seq"] for e in store.read("exec-pg")] == [1]
    finally:
        store.close()

    out = large_results.externalize(_outcome(), None, execution_id="exec-pg", task_run_id="t", attempt=1)
    assert out["result"]["ref"] == "noetl://postgres/exec-pg/t-1.json"
    assert large_results.resolve_ref(out["result"]) == _outcome()["result"]

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        counts = {table: conn.execute(f"SELECT count(*) FROM {pg_schema}.{table}").fetchone()[0]
                  for table in ("noetl_payloads", "noetl_events", "noetl_result_store")}
    assert counts == {"noetl_payloads": 1, "noetl_events": 1, "noetl_result_store": 1}


_OLD_USER = textwrap.dedent("""
    import asyncio, sys
    from temporalio.api.common.v1 import Payload
    from noetl_temporal.store import large_results, open_event_store
    from noetl_temporal.conversion.claimcheck import ClaimCheckCodec

    big = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * 200_000 + b'"')
    for attempt in (1, 2):   # twice: the warnings come once per process
        asyncio.run(ClaimCheckCodec().encode([big]))
        open_event_store().close()
        out = large_results.externalize({"result": {"b": "r" * 300_000}}, None, execution_id="e",
                                        task_run_id="t", attempt=attempt)
        print(out["result"]["store"])
""")


def test_old_settings_still_work_and_warn_once(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    env = {k: v for k, v in os.environ.items() if k not in OLD}
    env.update(NOETL_STORE=new.as_uri(), NOETL_PAYLOAD_STORE=str(old / "p"),
               NOETL_EVENT_STORE=str(old / "ev.db"), NOETL_RESULT_STORE=str(old / "r"),
               NOETL_RESULT_STORE_KIND="fs")
    done = subprocess.run([sys.executable, "-c", _OLD_USER], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fs", "fs"]
    # The old settings win over NOETL_STORE for their kind: nothing went to the new store.
    assert (old / "ev.db").exists() and list((old / "p").iterdir()) and (old / "r" / "e" / "t-2.json").exists()
    assert not new.exists()
    for name in ("NOETL_PAYLOAD_STORE", "NOETL_EVENT_STORE", "NOETL_RESULT_STORE", "NOETL_RESULT_STORE_KIND"):
        assert done.stderr.count(f"{name} is deprecated: set NOETL_STORE") == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_old_result_dsn_still_works(pg_dsn: str, pg_schema: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in OLD}
    env.update(NOETL_STORE=tmp_path.as_uri(), NOETL_RESULT_STORE_KIND="postgres",
               NOETL_RESULT_STORE_DSN=_in_schema(pg_dsn, pg_schema))
    code = ("from noetl_temporal.store import large_results\n"
            "out = large_results.externalize({'result': {'b': 'r' * 300_000}}, None, execution_id='e', "
            "task_run_id='t', attempt=1)\n"
            "print(out['result']['ref'], large_results.resolve_ref(out['result']) == {'b': 'r' * 300_000})")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["noetl://postgres/e/t-1.json", "True"]
    assert done.stderr.count("NOETL_RESULT_STORE_DSN is deprecated") == 1, done.stderr


def test_cli_names_a_bad_store_url(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in OLD}
    env["NOETL_STORE"] = "s3://bucket/noetl"
    done = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "events", "some-id"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "NOETL_STORE='s3://bucket/noetl': s3:// stores are not supported yet" in done.stderr
    assert "Traceback" not in done.stderr
