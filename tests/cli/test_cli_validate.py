"""``noetl-temporal validate``: exit codes, text and JSON output, no tracebacks on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from noetl_temporal.cli.main import COMMANDS, build_parser, main
from tests.dsl.helpers import playbook

REPO = Path(__file__).resolve().parents[2]
VALID = playbook("workflow:\n  - step: a\n    tool: {kind: noop}\n  - step: island\n    tool: {kind: noop}\n")
INVALID = playbook("workflow:\n  - step: a\n    tool: {kind: noop}\n    next: end\n")

BROKEN = {
    "malformed.yaml": b"workflow:\n  - step: [a\n",
    "empty.yaml": b"",
    "binary.yaml": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "latin1.yaml": b"a: caf\xe9\n",
    "list.yaml": b"- 1\n",
}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "valid.yaml").write_text(VALID)
    (tmp_path / "invalid.yaml").write_text(INVALID)
    for name, data in BROKEN.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "adir").mkdir()
    return tmp_path


def test_valid_file_exits_zero_and_prints_warnings(files, capsys):
    assert main(["validate", str(files / "valid.yaml")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{files / 'valid.yaml'}:8:5: NTL505 step 'island' can never run: no arc leads "
                                f"to it from the entry step 'a' (workflow[1]) — fix: add an arc to it, or remove it"]
    assert "1 valid, 0 invalid" in err


def test_errors_come_before_warnings_and_exit_is_two(files, capsys):
    assert main(["validate", str(files / "valid.yaml"), str(files / "invalid.yaml")]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[1].split()[0] for line in lines] == ["NTL501", "NTL505"]
    assert lines[0].startswith(f"{files / 'invalid.yaml'}:8:11: NTL501 ")
    assert " — fix: " in lines[0]


@pytest.mark.parametrize("name,code", [("malformed.yaml", "NTL005"), ("empty.yaml", "NTL007"),
                                       ("binary.yaml", "NTL004"), ("latin1.yaml", "NTL004"),
                                       ("list.yaml", "NTL008"), ("adir", "NTL002"), ("missing.yaml", "NTL001")])
def test_broken_inputs(files, capsys, name, code):
    assert main(["validate", str(files / name)]) == 2
    out = capsys.readouterr().out
    assert f" {code} " in out and "Traceback" not in out


def test_json_output(files, capsys):
    assert main(["validate", "--json", str(files / "valid.yaml"), str(files / "invalid.yaml"),
                 str(files / "adir")]) == 2
    report = json.loads(capsys.readouterr().out)
    assert [(r["file"], r["valid"], len(r["errors"]), len(r["warnings"])) for r in report] == [
        (str(files / "valid.yaml"), True, 0, 1), (str(files / "invalid.yaml"), False, 1, 0),
        (str(files / "adir"), False, 1, 0)]
    error = report[1]["errors"][0]
    assert {k: error[k] for k in ("code", "severity", "line", "col", "path")} == {
        "code": "NTL501", "severity": "error", "line": 8, "col": 11, "path": "workflow[0].next"}
    assert error["fix"] and error["file"] == str(files / "invalid.yaml")


def test_stdin(monkeypatch, capsys):
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO(INVALID))
    assert main(["validate", "-"]) == 2
    assert capsys.readouterr().out.startswith("<stdin>:8:11: NTL501")


def test_usage_errors_and_help_return_codes(capsys):
    assert main([]) == 2
    assert main(["validate"]) == 2
    assert main(["--help"]) == 0
    assert "validate" in capsys.readouterr().out


def test_parser_has_one_subcommand_per_entry():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == [c.name for c in COMMANDS]


def test_module_entry_point_with_every_broken_input(files):
    args = [str(files / n) for n in (*BROKEN, "adir", "missing.yaml", "invalid.yaml")]
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "validate", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert len(proc.stdout.splitlines()) == len(args)
    assert "0 valid, 8 invalid" in proc.stderr
