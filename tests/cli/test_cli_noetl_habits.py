"""NoETL's command-line habits, through the CLI as a subprocess: `register FILE...`, `catalog
list|show|get|register`, and `run` with a catalog reference (`catalog://PATH@N`, NoETL's
leading '/'), `-t/--target`, `-i/--input` and `-v/--verbose` (docs/migrating-from-noetl.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VARS_API = REPO / "tests/corpus/noetl-e2e/fixtures/playbooks/vars_test/test_vars_api.yaml"

PARENT = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: parent, path: /habits/parent}
workload: {who: nobody}
workflow:
  - step: start
    tool: {kind: shell, cmd: "exit 3"}
    next: {arcs: [{step: greet}]}
  - step: greet
    tool: {kind: playbook, path: child, args: {who: "{{ workload.who }}"}}
"""
CHILD = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: child, path: /habits/child}
workload: {who: someone}
workflow:
  - step: hello
    tool: {kind: python, input: {who: "{{ workload.who }}"}, code: "result = {'hi': who}"}
"""


def cli(*args: str, catalog: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NOETL_CATALOG_PATH", "NOETL_CATALOG_DSN")}
    flags = ["--catalog-path", str(catalog)] if catalog is not None else []
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args, *flags], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=env)


def test_register_then_list_and_show_as_noetl_users_do(tmp_path):
    db = tmp_path / "catalog.db"
    (tmp_path / "parent.yaml").write_text(PARENT)
    (tmp_path / "bad.yaml").write_text("workflow:\n  - step: a\n    tool: {kind: nope}\n")
    proc = cli("register", str(VARS_API), str(tmp_path / "parent.yaml"), str(tmp_path / "bad.yaml"), catalog=db)
    # the valid ones are stored, the invalid one is refused with its located errors: exit 2
    assert proc.returncode == 2, proc.stderr
    assert "registered vars_test/api_test version 1" in proc.stdout   # NoETL's '/vars_test/api_test'
    assert "registered habits/parent version 1" in proc.stdout
    assert f"{tmp_path / 'bad.yaml'}:3:" in proc.stderr and "was not registered" in proc.stderr
    again = cli("catalog", "register", str(VARS_API), "--json", catalog=db)
    assert again.returncode == 0, again.stderr
    [entry] = json.loads(again.stdout)
    assert (entry["path"], entry["version"], entry["created"]) == ("vars_test/api_test", 1, False)

    listed = cli("catalog", "list", catalog=db)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["PATH", "LATEST", "VERSIONS", "UPDATED"]
    assert [line.split()[:3] for line in lines[1:]] == [["habits/parent", "1", "1"], ["vars_test/api_test", "1", "1"]]
    as_json = json.loads(cli("catalog", "list", "Playbook", "--json", catalog=db).stdout)
    assert [i["path"] for i in as_json] == ["habits/parent", "vars_test/api_test"]

    shown = cli("catalog", "show", "/vars_test/api_test", catalog=db)
    assert shown.returncode == 0 and shown.stdout == VARS_API.read_text(), shown.stderr
    got = json.loads(cli("catalog", "get", "catalog://habits/parent@1", "--json", catalog=db).stdout)
    assert got["content"] == PARENT and [v["version"] for v in got["versions"]] == [1]

    missing = cli("catalog", "show", "habits/nope", catalog=db)
    assert missing.returncode == 2 and "'habits/nope' is not in the catalog" in missing.stderr
    credentials = cli("catalog", "list", "Credential", catalog=db)
    assert credentials.returncode == 2 and "keychain" in credentials.stderr


def test_run_names_a_catalog_entry_and_checks_target_and_input(tmp_path):
    db = tmp_path / "catalog.db"
    (tmp_path / "parent.yaml").write_text(PARENT)
    assert cli("register", str(tmp_path / "parent.yaml"), catalog=db).returncode == 0
    plan = cli("run", "catalog://habits/parent@1", "--dry-run", "-t", "greet", catalog=db)
    assert plan.returncode == 0 and "runs first: greet" in plan.stdout, plan.stderr
    plan = cli("run", "/habits/parent", "--dry-run", catalog=db)
    assert plan.returncode == 0 and "runs first: start" in plan.stdout, plan.stderr
    for args, says in ((("/habits/nope",), "'/habits/nope' is no file, and playbook 'habits/nope' is not in"),
                       (("catalog://habits/parent@2",), "version 2 of playbook 'habits/parent' is not in"),
                       (("/habits/parent", "-t", "nope"), "--target 'nope' is not a step of /habits/parent"),
                       (("/habits/parent", "-i", str(tmp_path / "none.json")), "--input"),
                       (("nothere.yaml",), "NTL001"),
                       ((str(tmp_path / "parent.yaml"), "-V", "1"), "names a catalog version, but")):
        proc = cli("run", *args, catalog=db)
        assert proc.returncode == 2 and says in proc.stderr, (args, proc.stderr)


@pytest.mark.temporal
def test_run_from_the_catalog_with_target_input_and_verbose(tmp_path):
    """One run: `/habits/parent` from the catalog the flag names, started at `greet` (so the
    failing `start` never runs), with the payload of `-i`, its child found next to it in that
    catalog by the in-process worker, every event printed with `-v`."""
    db = tmp_path / "catalog.db"
    for name, text in (("parent.yaml", PARENT), ("child.yaml", CHILD)):
        (tmp_path / name).write_text(text)
    assert cli("register", str(tmp_path / "parent.yaml"), str(tmp_path / "child.yaml"), catalog=db).returncode == 0
    (tmp_path / "input.json").write_text(json.dumps({"who": "ada"}))
    proc = cli("run", "/habits/parent", "--target", "greet", "-i", str(tmp_path / "input.json"), "-v", "--json",
               catalog=db)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    report = json.loads(proc.stdout)
    assert report["state"] == "COMPLETED" and set(report["steps"]) == {"greet"}
    assert json.dumps(report["steps"]["greet"]["result"]).count('"hi": "ada"') == 1, report["steps"]
    # -v: every event with its payload, not only the progress ones
    assert '{"entry_step": "greet"}' in proc.stderr and "playbook.execution.requested" in proc.stderr
