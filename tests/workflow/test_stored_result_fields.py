"""A step result stored by reference keeps its fields in templates (issue 37, item 1).

Through ``noetl-temporal run`` as a subprocess: whether a result is stored by reference
(its size, ``output.inline_max_bytes``) must not change which arc fires or what a task
argument renders; what the workflow cannot serve fails the step, located, with its size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]

#: ~3 MB: 6,000 rows of ~500 bytes, far over the default 256 KiB inline limit
BIG = 'result = {"count": 6000, "rows": [{"id": i, "pad": "x" * 480} for i in range(6000)]}'


def _playbook(producer: str, *, when: str = "{{ start.count > 100 }}", output: str = "") -> str:
    return f"""\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: stored_fields}}
workflow:
  - step: start
    tool:
      kind: python
{output}      code: '{producer}'
    next:
      spec: {{mode: exclusive}}
      arcs:
        - step: big
          when: "{when}"
        - step: small
  - step: big
    tool:
      kind: python
      args:
        n: "{{{{ start.count }}}}"
        first: "{{{{ start.rows[0].id }}}}"
        rows: "{{{{ start.rows }}}}"
      code: 'result = {{"branch": "big", "n": n, "first": first, "rows": len(rows)}}'
  - step: small
    tool: {{kind: python, code: 'result = {{"branch": "small"}}'}}
"""


def _run(tmp_path: Path, text: str) -> tuple[subprocess.CompletedProcess, dict]:
    path = tmp_path / "stored.yaml"
    path.write_text(text)
    env = dict(os.environ, NOETL_RESULT_STORE=str(tmp_path / "results"))
    env.pop("NOETL_INLINE_MAX_BYTES", None)
    # The CLI's embedded server and worker live and die with the subprocess: its timeout
    # bounds the execution.
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=180, env=env)
    assert proc.stdout, proc.stderr
    return proc, json.loads(proc.stdout)


def _stored(report: dict) -> dict:
    ref = report["steps"]["start"]["result"]
    assert ref["kind"] == "result_ref", ref  # the case under test: the result left by reference
    return ref


def test_a_3mb_result_routes_and_renders_by_its_fields(tmp_path):
    proc, report = _run(tmp_path, _playbook(BIG))
    assert proc.returncode == 0, proc.stderr
    assert _stored(report)["meta"]["bytes"] > 2_500_000
    assert "small" not in report["steps"]
    # a kept field, a kept nested path, and the whole large list read back by the task's activity
    assert report["steps"]["big"]["result"] == {"branch": "big", "n": 6000, "first": 0, "rows": 6000}


def test_a_tiny_result_under_inline_max_bytes_0_reads_the_same(tmp_path):
    tiny = 'result = {"count": 6000, "rows": [{"id": 7}]}'
    proc, report = _run(tmp_path, _playbook(tiny, output="      output: {inline_max_bytes: 0}\n"))
    assert proc.returncode == 0, proc.stderr
    assert _stored(report)["meta"]["bytes"] < 100
    assert report["steps"]["big"]["result"] == {"branch": "big", "n": 6000, "first": 7, "rows": 1}


def test_spec_result_select_keeps_the_fields_too(tmp_path):
    spec = "      spec: {result: {inline_max_bytes: 0, select: {total: count}}}\n"
    proc, report = _run(tmp_path, _playbook('result = {"count": 6000, "rows": [{"id": 3}]}', output=spec))
    assert proc.returncode == 0, proc.stderr
    assert _stored(report)["extracted"] == {"total": 6000}
    assert report["steps"]["big"]["result"]["n"] == 6000


def test_a_guard_needing_the_whole_big_list_fails_located(tmp_path):
    when = "{{ start.rows | sum(attribute='id') > 100 }}"
    text = _playbook(BIG, when=when)
    proc, report = _run(tmp_path, text)
    assert proc.returncode == 1, proc.stderr
    assert report["state"] == "FAILED" and "big" not in report["steps"] and "small" not in report["steps"]
    error = report["error"]
    line = text.splitlines().index(f'          when: "{when}"') + 1
    assert f"stored.yaml:{line}:" in error            # located at the guard
    assert when in error                               # names the template
    assert "`start.rows`" in error and "MB" in error   # and the size that could not be served
    assert "fix:" in error


def test_task_output_select_is_accepted(tmp_path):
    # NoETL's `tool.output.output_select` (its fixtures): the top-level keys kept for templates
    output = "      output: {inline_max_bytes: 0, output_select: [count]}\n"
    proc, report = _run(tmp_path, _playbook('result = {"count": 6000, "rows": [{"id": 1}]}', output=output))
    assert proc.returncode == 0, proc.stderr
    assert "count" in _stored(report)["fields"]
    assert report["steps"]["big"]["result"]["n"] == 6000


def test_a_task_policy_reads_the_result_the_tool_gave(tmp_path):
    # the policy's guard runs in the activity: it reads the 3 MB result, not the reference it left as
    spec = ('      spec: {policy: {rules: [{when: "{{ output.data.count > 100 }}", '
            'then: {do: fail}}]}}\n')
    proc, report = _run(tmp_path, _playbook(BIG, output=spec))
    assert proc.returncode == 1, proc.stderr
    assert report["state"] == "FAILED" and report["steps"]["start"]["status"] == "FAILED"


def test_a_guard_on_the_outcome_reads_the_kept_fields_too(tmp_path):
    proc, report = _run(tmp_path, _playbook(BIG, when="{{ outcome.result.count > 100 and output.data.count == 6000 }}"))
    assert proc.returncode == 0, proc.stderr
    assert report["steps"]["big"]["result"]["n"] == 6000 and "small" not in report["steps"]


def _loop_playbook(when: str) -> str:
    # each iteration's result is stored by reference (inline_max_bytes: 0), as a large one is
    return f"""\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: stored_loop_fields}}
workflow:
  - step: each
    loop: {{in: [1, 2], iterator: item}}
    tool:
      kind: python
      spec: {{result: {{inline_max_bytes: 0}}}}
      args: {{item: "{{{{ item }}}}"}}
      code: 'result = {{"count": 6000, "item": item, "rows": [{{"id": item}}]}}'
    next:
      spec: {{mode: exclusive}}
      arcs:
        - step: big
          when: "{when}"
        - step: small
  - step: big
    tool:
      kind: python
      args:
        n: "{{{{ each.results[0].count }}}}"
        second: "{{{{ each.results[1].item }}}}"
        first_id: "{{{{ each.results[0].rows[0].id }}}}"
      code: 'result = {{"branch": "big", "n": n, "second": second, "first_id": first_id}}'
  - step: small
    tool: {{kind: python, code: 'result = {{"branch": "small"}}'}}
"""


@pytest.mark.parametrize("when", ["{{ each.results[0].count > 100 }}",
                                  "{{ outcome.result.results[1].count == 6000 and output.data.results[0].item == 1 }}",
                                  "{{ each.results | selectattr('count', 'gt', 100) | list | length == 2 }}"])
def test_a_loop_iterations_stored_results_keep_their_fields(tmp_path, when):
    proc, report = _run(tmp_path, _loop_playbook(when))
    assert proc.returncode == 0, proc.stderr
    results = report["steps"]["each"]["result"]["results"]
    assert [r["kind"] for r in results] == ["result_ref", "result_ref"]  # the case under test
    assert "small" not in report["steps"]
    assert report["steps"]["big"]["result"] == {"branch": "big", "n": 6000, "second": 2, "first_id": 1}


def test_a_loop_iteration_field_no_template_names_fails_located(tmp_path):
    # a key built at run time, over the top-level scalars kept: a located failure, not the fallback
    when = "{{ each.results[0]['ro' ~ 'ws'] | length > 0 }}"
    text = _loop_playbook(when)
    proc, report = _run(tmp_path, text)
    assert proc.returncode == 1, proc.stderr
    assert report["state"] == "FAILED" and "big" not in report["steps"] and "small" not in report["steps"]
    error = report["error"]
    line = text.splitlines().index(f'          when: "{when}"') + 1
    assert f"stored.yaml:{line}:" in error and "`each.results.0.rows`" in error and "fix:" in error
    assert "iteration result `each.results.0` of loop step `each`" in error
