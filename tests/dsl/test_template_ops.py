"""Templates the workflow renders may use only the filters and tests whose cost is bounded
by their input (issue 38): the others are NTL706, located, with the fix; the table is data,
covers every filter and test the sandbox exposes, and docs/durability.md is generated from it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from noetl_temporal import templates
from noetl_temporal.dsl.template_ops import OPERATIONS, TASK, markdown

from .helpers import diags, find, playbook

REPO = Path(__file__).resolve().parents[2]

TEXT = playbook("""
workflow:
  - step: start
    tool:
      kind: python
      code: "def main(text): return {'html': text}"
      args: {text: "{{ workload.text | urlize | striptags | wordwrap(10) | pprint }}"}
    loop: {in: "{{ [workload.text | wordwrap(5)] }}", iterator: it}
    next:
      arcs:
        - step: end
          when: "{{ workload.text | urlize }}"
          args: {t: "{{ workload.text | map('striptags') | list }}"}
          set: {ctx.h: "{{ workload.text | pprint }}"}
  - step: end
    tool: {kind: noop, result: {r: "{{ workload.items | select('lower') | list }}", u: "{{ 'a' | urlize }}"}}
""")


@pytest.mark.parametrize("needle, name, place", [
    ("workload.text | wordwrap(5)", "wordwrap", "a `loop`"),
    ("workload.text | urlize }}", "urlize", "a guard (`when`)"),
    ("map('striptags')", "striptags", "`args`"),
    ("workload.text | pprint }}\"}", "pprint", "a `set`"),
    ("'a' | urlize", "urlize", "the settings of a task the workflow runs itself"),
])
def test_a_task_only_filter_in_a_workflow_side_template_is_a_located_error(needle, name, place):
    line, _ = find(TEXT, needle)
    found = [d for d in diags(TEXT) if d.code == "NTL706" and d.line == line]
    assert found, [str(d) for d in diags(TEXT)]
    assert found[0].is_error
    assert f"`{name}` is not allowed in {place}" in found[0].message, found[0].message
    assert f"use `{name}` in a task's arguments" in (found[0].fix or ""), found[0].fix


def test_a_task_s_own_settings_may_use_them_and_tests_are_allowed_everywhere():
    found = [d for d in diags(TEXT) if d.code == "NTL706"]
    assert find(TEXT, "workload.text | urlize | striptags")[0] not in {d.line for d in found}
    assert len(found) == 5, [str(d) for d in found]


def test_the_cli_reports_it_at_the_file_s_line_and_column(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: p}
        workflow:
          - step: start
            tool: {kind: noop}
            next:
              arcs:
                - step: end
                  when: "{{ ('.' * 100000 ~ 'a.') | urlize }}"
          - step: end
            tool: {kind: noop}
        """).lstrip())
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "validate", "--json", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    errors = [d for d in json.loads(proc.stdout)[0]["errors"] if d["code"] == "NTL706"]
    assert errors and errors[0]["line"] == 10, errors
    assert "`urlize` is not allowed in a guard" in errors[0]["message"]
    assert "use `urlize` in a task's arguments" in errors[0]["fix"]


def test_every_filter_and_test_the_sandbox_exposes_has_a_reviewed_row():
    exposed = {("filter", n) for n in templates._ENV.filters if n != "noetl_metered"}
    exposed |= {("test", n) for n in templates._ENV.tests}
    assert exposed == set(OPERATIONS), (exposed ^ set(OPERATIONS))
    assert all(op.reason for op in OPERATIONS.values())
    assert {name for (_, name), op in OPERATIONS.items() if op.allowed == TASK} == \
        {"urlize", "striptags", "wordwrap", "pprint"}


def test_the_durability_doc_holds_the_generated_table():
    doc = (REPO / "docs" / "durability.md").read_text(encoding="utf-8")
    start, end = "<!-- template-ops: start -->\n", "<!-- template-ops: end -->"
    assert doc[doc.index(start) + len(start):doc.index(end)] == markdown()
