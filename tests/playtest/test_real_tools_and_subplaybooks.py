"""``noetl-temporal test``: sub-playbooks mocked or run for real, and tool kinds run for real
(``real: [postgres]`` against the test PostgreSQL), through the CLI (docs/testing-playbooks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import postgres as pg

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "test", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, env={**os.environ, **(env or {})})


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_sub_playbooks_mocked_or_run_by_the_same_driver(tmp_path: Path) -> None:
    write(tmp_path / "child.yaml", """\
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: child, path: tests/child}
        workload: {n: 1}
        workflow:
          - step: compute
            tool:
              kind: python
              input: {n: "{{ workload.n }}"}
              code: |
                def main(n):
                    return {"double": n * 2}
        """)
    write(tmp_path / "parent.yaml", """\
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: parent, path: tests/parent}
        workflow:
          - step: call
            tool: {kind: playbook, path: child.yaml, args: {n: 21}, return_step: compute}
            set:
              ctx.answer: "{{ call.double }}"
        """)
    test = write(tmp_path / "parent.test.yaml", """\
        playbook: parent.yaml
        cases:
          - name: the child runs, its python task mocked
            real: [playbook]
            kinds: {python: {result: {double: 42}}}
            expect: {status: COMPLETED, ctx: {answer: 42}}
          - name: the child and its python task run for real
            real: [playbook, python]
            expect: {status: COMPLETED, ctx: {answer: 42}, results: {call: {double: 42}}}
          - name: the child mocked
            mocks: {call: {result: {double: 7}}}
            expect: {status: COMPLETED, ctx: {answer: 7}}
          - name: the child mocked failing
            mocks: {call: {error: child broke}}
            expect: {status: FAILED, error: child broke}
          - name: the child neither mocked nor real
            expect: {status: COMPLETED}
        """)
    proc = cli(str(test))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "4 passed, 1 failed" in proc.stdout, proc.stdout
    assert "task 'call.call_task' (kind playbook) has no mock" in proc.stdout


def test_postgres_runs_for_real_when_asked(tmp_path: Path) -> None:
    dsn = pg.require_dsn()
    table = pg.unique_name("playtest")
    write(tmp_path / "db.yaml", f"""\
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: db, path: tests/db}}
        keychain:
          - name: pg
            kind: postgres
        workflow:
          - step: load
            tool:
              - create:
                  kind: postgres
                  auth: pg
                  command:
                    - CREATE TABLE {table} (id int)
                    - INSERT INTO {table} SELECT generate_series(1, 3)
              - count:
                  kind: postgres
                  auth: pg
                  command: SELECT count(*)::int AS n FROM {table}
            next: {{arcs: [{{step: notify}}]}}
          - step: notify
            tool: {{kind: http, url: "http://127.0.0.1:9/notify"}}
        """)
    test = write(tmp_path / "db.test.yaml", """\
        playbook: db.yaml
        cases:
          - name: the database for real, the HTTP call mocked
            real: [postgres]
            mocks: {notify: {result: {sent: true}}}
            expect:
              status: COMPLETED
              results: {load: {subset: {rows: [{n: 3}]}}}
        """)
    try:
        proc = cli(str(test), env={"NOETL_KEYCHAIN_PG": json.dumps(pg.fields(dsn))})
    finally:
        pg.execute(dsn, f"DROP TABLE IF EXISTS {table}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_a_cursor_loop_reads_its_pages_in_a_test_with_real_duckdb(tmp_path: Path) -> None:
    # the driver feeds a page back to its loop as the workflow shell does (docs/semantics.md)
    write(tmp_path / "pages.yaml", """\
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: pages}
        workflow:
          - step: each
            loop:
              cursor:
                kind: duckdb
                claim: "SELECT range AS n FROM range({{ __cursor_offset }}, 7) LIMIT {{ __frame_max_rows }}"
              iterator: row
              spec: {mode: cursor, frame: {max_rows: 3}}
            tool: {kind: noop}
        """)
    test = write(tmp_path / "pages.test.yaml", """\
        playbook: pages.yaml
        cases:
          - name: seven rows in pages of three
            real: [duckdb]
            expect: {status: COMPLETED, results: {each: {subset: {count: 7, done: 7, pages: 3}}}}
        """)
    out = cli(str(test))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout
