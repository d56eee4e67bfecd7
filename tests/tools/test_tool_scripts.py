"""NoETL's `script:` (tools/_scripts.py): a python task's code and a postgres task's SQL
loaded from a file and from a real HTTP server on loopback; nothing is mocked."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, run_tool
from tests.support import postgres as pg
from tests.support.loopback import LoopbackServer

HELLO = """\
def main(name, count):
    return {"status": "success", "messages": [f"Hello, {name}!"] * int(count)}
"""


class _Files(LoopbackServer):
    """Serves one directory over HTTP (and answers 503 at /down)."""

    name = "script-file-server"

    def __init__(self, root: Path) -> None:
        super().__init__()

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if self.path == "/down":
                    self.send_error(503)
                    return
                super().do_GET()

            def log_message(self, *args: object) -> None:
                pass

        handler = functools.partial(Handler, directory=str(root))

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def __init__(self, addr: tuple[str, int]) -> None:
                super().__init__(addr, handler)

        self.server_class = Server


@pytest.fixture
def served(tmp_path: Path):
    (tmp_path / "hello_world.py").write_text(HELLO)
    (tmp_path / "table.sql").write_text("CREATE TABLE {t} (id INT); INSERT INTO {t} VALUES (1), (2);\n"
                                        "SELECT count(*) AS n FROM {t};\n")
    with _Files(tmp_path) as server:
        yield tmp_path, server


async def test_python_code_from_a_file_and_from_http(call: ToolCall, served) -> None:
    root, server = served
    for script in ({"uri": str(root / "hello_world.py"), "source": {"type": "file"}},
                   {"uri": "hello_world.py", "source": {"type": "http", "endpoint": server.url("/hello_world.py"),
                                                         "method": "GET", "timeout": 10}}):
        out = await run_tool("python", {"script": script, "input": {"name": "ada", "count": 2}}, call)
        assert out["status"] == "ok", out
        assert out["result"] == {"status": "success", "messages": ["Hello, ada!", "Hello, ada!"]}


async def test_noetls_inline_source_is_the_code_itself(call: ToolCall) -> None:
    out = await run_tool("python", {"script": {"uri": "inline", "source": {"type": "inline", "code": "result = 7"}}},
                         call)
    assert out["status"] == "ok" and out["result"] == 7, out


async def test_a_script_that_cannot_be_loaded_fails_the_task_saying_why(call: ToolCall, served) -> None:
    root, server = served
    missing = await run_tool("python", {"script": {"uri": str(root / "nope.py"), "source": {"type": "file"}}}, call)
    assert missing["status"] == "error" and "does not exist on this worker" in missing["error"]["message"]
    assert missing["error"]["retryable"] is False
    gone = await run_tool("python", {"script": {"source": {"type": "http", "endpoint": server.url("/nope.py")}}},
                          call)
    assert "HTTP 404" in gone["error"]["message"] and gone["error"]["retryable"] is False
    down = await run_tool("python", {"script": {"source": {"type": "http", "endpoint": server.url("/down")}}}, call)
    assert "HTTP 503" in down["error"]["message"] and down["error"]["retryable"] is True


async def test_postgres_sql_from_a_file_and_from_http(call: ToolCall, served) -> None:
    root, server = served
    dsn = pg.require_dsn()
    call.keychain = {"db": pg.fields(dsn)}
    for how in ("file", "http"):
        table = pg.unique_name()
        (root / f"{table}.sql").write_text((root / "table.sql").read_text().replace("{t}", table))
        script = ({"uri": str(root / f"{table}.sql"), "source": {"type": "file"}} if how == "file"
                  else {"uri": server.url(f"/{table}.sql"), "source": {"type": "http"}})
        try:
            out = await run_tool("postgres", {"auth": "db", "script": script}, call)
        finally:
            pg.execute(dsn, f"DROP TABLE IF EXISTS {table}")
        assert out["status"] == "ok", out
        assert out["result"]["rows"] == [{"n": 2}] and "command_2" in out["result"], out["result"]


@pytest.fixture
def s3_server():
    """moto's S3-compatible server on loopback, with a bucket holding the script."""
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="test", aws_secret_access_key="test")
        client.create_bucket(Bucket="scripts")
        client.put_object(Bucket="scripts", Key="py/hello_world.py", Body=HELLO.encode())
        client.put_object(Bucket="scripts", Key="sql/count.sql", Body=b"SELECT 40 + 2 AS n;")
        yield endpoint
    finally:
        server.stop()


def _s3(endpoint: str, **extra) -> dict:
    return {"type": "s3", "region": "us-east-1", "endpoint": endpoint, "access_key_id": "test",
            "secret_access_key": "test", **extra}


async def test_code_and_sql_from_s3_on_a_local_s3_server(call: ToolCall, s3_server: str) -> None:
    out = await run_tool("python", {"script": {"uri": "s3://scripts/py/hello_world.py", "source": _s3(s3_server)},
                                    "input": {"name": "s3", "count": 1}}, call)
    assert out["status"] == "ok", out
    assert out["result"] == {"status": "success", "messages": ["Hello, s3!"]}
    # NoETL's other spelling: the bucket in `source`, the key as `uri`
    dsn = pg.require_dsn()
    call.keychain = {"db": pg.fields(dsn)}
    sql = await run_tool("postgres", {"auth": "db", "script": {"uri": "sql/count.sql",
                                                               "source": _s3(s3_server, bucket="scripts")}}, call)
    assert sql["status"] == "ok" and sql["result"]["rows"] == [{"n": 42}], sql
    missing = await run_tool("python", {"script": {"uri": "s3://scripts/nope.py", "source": _s3(s3_server)}}, call)
    assert missing["status"] == "error" and "cannot read script s3://scripts/nope.py" in missing["error"]["message"]
    assert missing["error"]["retryable"] is False
