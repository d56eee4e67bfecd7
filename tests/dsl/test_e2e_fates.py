"""Every file of NoETL's e2e fixture set has a known fate (docs/noetl-e2e-fates.md).

The page is the record: regenerate it (``python -m tests.dsl.e2e_fates >
docs/noetl-e2e-fates.md``) when a fate changes on purpose, and review the diff.
"""

from __future__ import annotations

from pathlib import Path

from .e2e_fates import E2E, NOT_PLAYBOOKS, fates, markdown, playbook_files

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


def test_a_result_tier_on_a_cloud_is_refused_naming_the_service_and_step_output_is_read():
    found = {(f.path, d.code) for f in fates() for d in f.errors if d.code in ("NTL343", "NTL344", "NTL345")}
    assert found == {("fixtures/playbooks/test_gcs_storage.yaml", "NTL343")}
    assert not [f.path for f in fates() for d in f.errors if d.code == "NTL203" and "`output`" in d.message]
