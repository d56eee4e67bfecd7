"""A task policy's ``then.set`` reading a stored result (docs/tools.md, "Large results").

Through ``noetl-temporal run`` as a subprocess, against a real HTTP server on loopback: an
http task's ~200 KB body is stored by reference, its ``data`` list (~200 KB) is over the
64 KiB the workflow keeps, and the policy's ``then.set`` reads it as NoETL's
``test_pft_flow`` does (``iter.batch_rows: '{{ output.data.data.rows }}'``). That read
fails the step, located, with the template, the path and both sizes: never undefined, with
the next task quietly given ``None`` (behaviours.STORED_POLICY_FIELDS). A small field read
the same way is served from the kept fields.
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


def _fetch(url: str, set_: str, indent: str) -> str:
    return f"""\
{indent}- name: fetch
{indent}  kind: http
{indent}  url: "{url}"
{indent}  output: {{inline_max_bytes: 65536}}
{indent}  spec:
{indent}    policy:
{indent}      rules:
{indent}        - when: "{{{{ output.status == 'error' }}}}"
{indent}          then: {{do: fail}}
{indent}        - else:
{indent}            then:
{indent}              do: continue
{indent}              set: {{{set_}}}
"""


def _playbook(url: str) -> str:
    return f"""\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: stored_policy}}
workflow:
  - step: start
    tool:
{_fetch(url, "rows: '{{ output.data.data.data }}'", "      ")}\
      - name: count
        kind: python
        args: {{rows: "{{{{ rows }}}}"}}
        code: 'result = {{"n": None if rows is None else len(rows)}}'
"""


def _loop_playbook(url: str, set_: str = "iter.batch_rows: '{{ output.data.data.data }}', "
                   "iter.total: '{{ output.data.data.paging.total }}'") -> str:
    return f"""\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: stored_policy_loop}}
workflow:
  - step: start
    loop: {{in: "{{{{ [1, 2] }}}}", iterator: page}}
    tool:
{_fetch(url, set_, "      ")}\
      - name: count
        kind: python
        args: {{rows: "{{{{ iter.batch_rows }}}}", total: "{{{{ iter.total }}}}"}}
        code: 'result = {{"n": None if rows is None else len(rows), "total": total}}'
"""


def _run(tmp_path: Path, text: str) -> tuple[subprocess.CompletedProcess, dict]:
    path = tmp_path / "stored_policy.yaml"
    path.write_text(text)
    env = dict(os.environ, NOETL_RESULT_STORE=str(tmp_path / "results"))
    env.pop("NOETL_INLINE_MAX_BYTES", None)
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=180, env=env)
    assert proc.stdout, proc.stderr
    return proc, json.loads(proc.stdout)


def _assert_located(error: str) -> None:
    assert "`start.data.data`" in error and "stored by reference" in error, error
    assert "KB" in error and "64.0 KB" in error, error      # the part's size and what is kept
    assert "output.data.data.data" in error, error          # the template
    assert "policy.rules[1].then" in error or "stored_policy.yaml:" in error, error
    assert "fix:" in error


def test_a_policy_set_reading_a_part_over_the_kept_fails_located(tmp_path):
    with HTTPTestServer() as srv:
        text = _playbook(srv.url(PAGE))
        proc, report = _run(tmp_path, text)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert report["state"] == "FAILED", report
    _assert_located(report["error"])


def test_in_a_loop_each_iteration_fails_located(tmp_path):
    with HTTPTestServer() as srv:
        proc, report = _run(tmp_path, _loop_playbook(srv.url(PAGE)))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert report["state"] == "FAILED" and report["steps"]["start"]["result"]["failed"] == 2, report["steps"]
    failed = [e["payload"]["error"]["message"] for e in report["events"] if e["event_type"] == "loop.iteration.failed"]
    assert len(failed) == 2
    for message in failed:
        _assert_located(message)


def test_a_small_field_read_so_is_served_from_the_kept_fields(tmp_path):
    with HTTPTestServer() as srv:
        proc, report = _run(tmp_path, _loop_playbook(srv.url(PAGE), "iter.total: '{{ output.data.data.paging.total }}'"))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert report["steps"]["start"]["result"]["results"] == [{"n": None, "total": 6000}] * 2
