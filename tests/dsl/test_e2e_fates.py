"""Every file of NoETL's e2e fixture set has a known fate (docs/noetl-e2e-fates.md).

The page is the record: regenerate it (``python -m tests.dsl.e2e_fates >
docs/noetl-e2e-fates.md``) when a fate changes on purpose, and review the diff.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .e2e_fates import (
    E2E,
    NOT_PLAYBOOKS,
    ON_NOETL,
    P,
    fates,
    markdown,
    playbook_files,
    refused_though_noetl_runs_it_here,
)

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "noetl-e2e-fates.md"


# Codes that say only "this is not known" rather than why: no e2e file may be refused with
# them (a NoETL construct gets a message naming it, see noetl_temporal/dsl/noetl_only.py).
VAGUE = {"NTL302", "NTL902", "NTL999"}


def test_the_page_is_the_fate_of_every_file_today():
    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        "a file's fate changed: regenerate with `python -m tests.dsl.e2e_fates > docs/noetl-e2e-fates.md` "
        "and review the diff")


def test_every_file_of_the_set_is_in_the_table():
    on_disk = {p.relative_to(E2E).as_posix() for p in E2E.rglob("*") if p.is_file()}
    assert on_disk == {f.path for f in fates()}
    assert len(playbook_files()) == 166
    assert set(NOT_PLAYBOOKS) <= on_disk


def test_every_rejection_is_located_and_names_its_reason():
    rejected = [f for f in fates() if f.valid is False]
    assert rejected
    for fate in rejected:
        assert not VAGUE & set(fate.codes), (fate.path, fate.reasons())
        for d in fate.errors:
            assert d.line is not None and d.col is not None and d.path and d.fix, (fate.path, str(d))
        for d in fate.errors:
            if d.code in ("NTL101", "NTL203"):  # an unknown key in general; here a NoETL one
                assert "NoETL" in d.message, (fate.path, str(d))


def test_noetl_tool_kinds_are_refused_as_noetl_tools():
    kinds = {d.message.split("'")[1] for f in fates() for d in f.errors if d.code == "NTL320"}
    assert kinds == {"script", "agent"}


def test_kinds_needing_a_missing_service_are_refused_with_its_own_code():
    found = {(d.code, d.message.split("'")[1]) for f in fates() for d in f.errors
             if d.code in ("NTL336", "NTL337", "NTL338")}
    assert found == {("NTL336", "snowflake"), ("NTL337", "ducklake"), ("NTL338", "container")}


def test_every_rejected_file_says_what_noetl_does_with_it_and_only_those():
    assert sorted(ON_NOETL) == sorted(f.path for f in fates() if f.valid is False), (
        "a file's fate changed: say in ON_NOETL (tests/dsl/e2e_fates.py) whether NoETL runs it and whether "
        "it could run here, with the evidence")
    for path, on in ON_NOETL.items():
        assert on.evidence, path
        assert on.runs or not on.here, path  # "could run here" is asked only of what NoETL runs


#: refused here although NoETL runs them and they could run here, because another piece of
#: issue 42 is doing their construct: remove a row once that work is merged (the file then
#: validates, and gets a row in tests/dsl/e2e_needs.py so test_e2e_runs.py runs it)
PENDING: dict[str, str] = {}


def test_nothing_is_refused_that_noetl_runs_and_could_run_here_but_what_is_pending():
    """Issue 42's "done when": the count is 0, but for the files another piece of the issue is
    doing (PENDING: remove a row when its work is merged, the file then validates)."""
    assert refused_though_noetl_runs_it_here() == sorted(PENDING)
    for path in PENDING:
        assert ON_NOETL[path].runs and ON_NOETL[path].here, path


def _validate_through_the_cli(paths: list[str]) -> tuple[int, dict[str, list[str]]]:
    """``noetl-temporal validate --json FILE...`` as a user runs it: exit code, file -> error codes."""
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "validate", "--json", *paths],
                          cwd=E2E, capture_output=True, text=True, timeout=120)
    return proc.returncode, {r["file"]: sorted({e["code"] for e in r["errors"]}) for r in json.loads(proc.stdout)}


def test_the_cli_refuses_each_rejected_file_with_the_codes_of_the_table():
    rejected = {f.path: f.codes for f in fates() if f.valid is False}
    returncode, found = _validate_through_the_cli(sorted(rejected))
    assert returncode == 2
    assert found == rejected


def test_the_cli_accepts_the_file_noetl_runs_whatever_features_it_names():
    """quantum_cudaq requires feature `ai_meta`: NoETL does not check feature names (NTL340), so it is valid."""
    path = P + "quantum_cudaq/quantum_cudaq.yaml"
    returncode, found = _validate_through_the_cli([path])
    assert (returncode, found) == (0, {path: []})
def test_a_result_tier_on_a_cloud_is_refused_naming_the_service_and_step_output_is_read():
    found = {(f.path, d.code) for f in fates() for d in f.errors if d.code in ("NTL343", "NTL344", "NTL345")}
    assert found == {("fixtures/playbooks/test_gcs_storage.yaml", "NTL343")}
    assert not [f.path for f in fates() for d in f.errors if d.code == "NTL203" and "`output`" in d.message]
