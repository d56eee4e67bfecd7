"""A task's own plain-name ``set:`` reading a stored result (docs/tools.md, "Large results").

Through ``noetl-temporal run`` as a subprocess, against a real HTTP server on loopback: an
http task's ~200 KB body is stored by reference (64 KiB inline). Its plain-name ``set:``
binds names to the task's *result* (``output`` is the result there, docs/semantics.md):
a small field (``{{ output.data.paging.total }}``) is served from the kept fields, and the
big list (``{{ output.data.data }}``) fails the step located, with the template, the path
and both sizes: never undefined, with the next task quietly given ``None``
(behaviours.STORED_TASK_SET_FIELDS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http_server import HTTPTestServer

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]

#: ~200 KB of `{"id", "name"}` items in the body's `data`, stored by reference (64 KiB inline)
PAGE = "/paged?size=6000&total=6000"


def _playbook(url: str, set_: str) -> str:
    return f"""\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: stored_task_set}}
workflow:
  - step: start
    tool:
      - name: fetch
        kind: http
        url: "{url}"
        output: {{inline_max_bytes: 65536}}
        set: {{{set_}}}
      - name: count
        kind: python
        args: {{total: "{{{{ total }}}}", rows: "{{{{ rows }}}}"}}
        code: 'result = {{"total": total, "n": None if rows is None else len(rows)}}'
"""


def _run(tmp_path: Path, text: str) -> tuple[subprocess.CompletedProcess, dict]:
    path = tmp_path / "stored_task_set.yaml"
    path.write_text(text)
    env = dict(os.environ, NOETL_RESULT_STORE=str(tmp_path / "results"))
    env.pop("NOETL_INLINE_MAX_BYTES", None)
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=180, env=env)
    assert proc.stdout, proc.stderr
    return proc, json.loads(proc.stdout)


def test_a_small_field_read_by_a_plain_set_is_served_from_the_kept_fields(tmp_path):
    with HTTPTestServer() as srv:
        proc, report = _run(tmp_path, _playbook(srv.url(PAGE), "total: '{{ output.data.paging.total }}'"))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert report["steps"]["start"]["result"] == {"total": 6000, "n": None}, report["steps"]


def test_a_plain_set_reading_a_part_over_the_kept_fails_located(tmp_path):
    with HTTPTestServer() as srv:
        proc, report = _run(tmp_path, _playbook(srv.url(PAGE), "total: '{{ output.data.paging.total }}', "
                                                               "rows: '{{ output.data.data }}'"))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert report["state"] == "FAILED", report
    error = report["error"]
    assert "`start.data.data`" in error and "stored by reference" in error, error
    assert "KB" in error and "64.0 KB" in error, error      # the part's size and what is kept
    assert "output.data.data" in error, error                # the template
    assert "fix:" in error, error
