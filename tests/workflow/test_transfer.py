"""`transfer` and `artifact` end to end on the Temporal dev server: NoETL's own
http_to_postgres_transfer fixture, its API replaced by a loopback stand-in, and a stored
result read back with NoETL's `artifact` spelling."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.dsl.e2e_fates import E2E
from tests.support import postgres as pg
from tests.support.loopback import LoopbackServer

pytestmark = pytest.mark.temporal

FIXTURE = E2E / "fixtures/playbooks/data_transfer/http_to_postgres_transfer/http_to_postgres_transfer.yaml"
POSTS = [{"userId": 1 + i // 10, "id": i + 1, "title": f"title {i + 1}", "body": f"body {i + 1}"}
         for i in range(100)]


class _Posts(BaseHTTPRequestHandler):
    """jsonplaceholder's `/posts` shape: a JSON list of {userId, id, title, body}."""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - keep test output clean
        pass

    def do_GET(self) -> None:
        body = json.dumps(POSTS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _PostsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr) -> None:
        super().__init__(addr, _Posts)


class PostsServer(LoopbackServer):
    server_class = _PostsServer
    name = "posts-stand-in"

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{path}"


@pytest.fixture
def posts() -> Iterator[PostsServer]:
    with PostsServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def result_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results"
    monkeypatch.setenv("NOETL_RESULT_STORE", str(root))
    return root


async def test_noetl_s_http_to_postgres_transfer_fixture_runs(run_yaml, posts, monkeypatch) -> None:
    dsn = pg.require_dsn()
    monkeypatch.setenv("NOETL_KEYCHAIN_PG_LOCAL", json.dumps(pg.fields(dsn)))
    try:
        report = await run_yaml(FIXTURE.read_text(encoding="utf-8"), payload={"api_url": posts.url("/posts")})
        assert report.state == "COMPLETED", report.error
        assert pg.execute(dsn, "SELECT count(*), sum(post_id), max(user_id) FROM public.http_to_postgres_transfer"
                          ) == [(100, 5050, 10)]
        moved = report.steps["transfer_http_to_pg"]["result"]
        assert moved["rows_transferred"] == 100 and moved["direction"] == "http_to_postgres"
    finally:
        pg.execute(dsn, "DROP TABLE IF EXISTS public.http_to_postgres_transfer")


async def test_artifact_get_reads_a_stored_result_back(run_yaml) -> None:
    report = await run_yaml("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: artifact_get}
        workflow:
          - step: start
            tool:
              kind: python
              code: "result = {'items': [{'id': i, 'pad': 'x' * 100} for i in range(3000)]}"
              spec: {result: {inline_max_bytes: 1024}}
            next: {spec: {mode: exclusive}, arcs: [{step: load}]}
          - step: load
            tool:
              - name: load_artifact
                kind: artifact
                action: get
                input: {result_ref: "{{ start }}"}
              - name: count
                kind: python
                input: {data: "{{ load_artifact.data }}"}
                code: "result = {'count': len(data['items']), 'last': data['items'][-1]['id']}"
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["load"]["result"] == {"count": 3000, "last": 2999}
