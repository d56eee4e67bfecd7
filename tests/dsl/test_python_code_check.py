"""``noetl-temporal validate`` compiles a python task's code (NTL314), located at the line
and column of the playbook file, and warns about a workload key the playbook does not
declare (NTL705): both driven as a subprocess, as a user runs them."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _validate(tmp_path: Path, text: str) -> tuple[int, list[dict]]:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "validate", "--json", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)[0]
    return proc.returncode, report["errors"] + report["warnings"]


def _line_col(tmp_path: Path, needle: str) -> tuple[int, int]:
    """The 1-based (line, column) of ``needle`` in the written playbook."""
    for number, line in enumerate((tmp_path / "p.yaml").read_text().splitlines(), 1):
        if needle in line:
            return number, line.index(needle) + 1
    raise AssertionError(needle)


def _only(diags: list[dict], code: str) -> list[dict]:
    return [d for d in diags if d["code"] == code]


def test_a_syntax_error_in_a_block_is_located_in_the_file(tmp_path):
    exit_code, diags = _validate(tmp_path, """
        workflow:
          - step: start
            tool:
              kind: python
              code: |
                x = 1

                result = {"greeting": "hi " + (x
    """)
    assert exit_code == 2
    [error] = _only(diags, "NTL314")
    assert error["severity"] == "error" and "'(' was never closed" in error["message"], error
    assert "line 3 of the code" in error["message"], error
    assert (error["line"], error["col"]) == _line_col(tmp_path, "(x"), error
    assert error["path"] == "workflow[0].tool.code"


def test_a_one_line_value_is_located_by_its_column(tmp_path):
    exit_code, diags = _validate(tmp_path, """
        workflow:
          - step: quoted
            tool: {kind: python, code: "result = 1 +* 2"}
            next: {spec: {mode: exclusive}, arcs: [{step: plain}]}
          - step: plain
            tool: {kind: python, code: result = ) }
    """)
    assert exit_code == 2
    quoted, plain = _only(diags, "NTL314")
    assert (quoted["line"], quoted["col"]) == _line_col(tmp_path, "* 2"), quoted
    assert (plain["line"], plain["col"]) == _line_col(tmp_path, ") }"), plain


def test_code_that_compiles_or_is_a_template_passes(tmp_path):
    b64 = base64.b64encode(b"def main():\n    return 1\n").decode()
    exit_code, diags = _validate(tmp_path, f"""
        workflow:
          - step: fine
            tool: {{kind: python, code: "def main(x=1):\\n    return {{'n': x}}\\n"}}
            next: {{spec: {{mode: exclusive}}, arcs: [{{step: rendered}}]}}
          - step: rendered
            tool: {{kind: python, code: "{{% if true %}}result = 1{{% endif %}}"}}
            next: {{spec: {{mode: exclusive}}, arcs: [{{step: encoded}}]}}
          - step: encoded
            tool: {{kind: python, code_b64: "{b64}"}}
    """)
    assert exit_code == 0 and not _only(diags, "NTL314"), diags


def test_encoded_code_that_does_not_compile_is_reported_at_its_value(tmp_path):
    b64 = base64.b64encode(b"return 1\n").decode()
    exit_code, diags = _validate(tmp_path, f"""
        workflow:
          - step: encoded
            tool: {{kind: python, code_b64: "{b64}"}}
    """)
    assert exit_code == 2
    [error] = _only(diags, "NTL314")
    assert "'return' outside function" in error["message"]
    assert (error["line"], error["col"]) == _line_col(tmp_path, f'"{b64}"'), error


def test_a_workload_key_the_playbook_lacks_is_a_warning(tmp_path):
    exit_code, diags = _validate(tmp_path, """
        workload:
          name: x
        workflow:
          - step: greet
            tool: {kind: noop, result: "{{ workload.nmae }} {{ workload.name }} {{ workload.other | default(1) }}"}
    """)
    assert exit_code == 0
    [warning] = _only(diags, "NTL705")
    assert warning["severity"] == "warning" and "`workload.nmae`" in warning["message"], warning
    assert "did you mean 'name'" in warning["message"], warning
    assert (warning["line"], warning["col"]) == _line_col(tmp_path, '"{{ workload.nmae'), warning


def test_without_a_workload_section_its_keys_are_not_checked(tmp_path):
    _, diags = _validate(tmp_path, """
        workflow:
          - step: greet
            tool: {kind: noop, result: "{{ workload.anything }}"}
    """)
    assert not _only(diags, "NTL705"), diags


def test_code_of_a_workbook_entry_is_located_in_the_entry(tmp_path):
    exit_code, diags = _validate(tmp_path, """
        workbook:
          - name: calc
            tool:
              kind: python
              code: |
                x = 1
                y = (
        workflow:
          - step: a
            tool: {kind: workbook, name: calc}
    """)
    assert exit_code == 2
    [error] = _only(diags, "NTL314")
    line, col = _line_col(tmp_path, "y = (")
    assert (error["line"], error["col"]) == (line, col + len("y = ")), error   # at the `(`
    assert error["path"] == "workbook[0].tool.code"
