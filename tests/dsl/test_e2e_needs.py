"""Every valid NoETL e2e fixture has a known need; the runnable ones are counted
(tests/dsl/e2e_needs.py, docs/noetl-e2e-runs.md). The runs themselves are
tests/workflow/test_e2e_runs.py."""

from __future__ import annotations

from pathlib import Path

from .e2e_needs import (
    COMPLETED,
    FAILED,
    KINDS,
    LOCAL,
    NEEDS,
    RUNNABLE_COUNT,
    markdown,
    noetl_validation,
    runnable,
    valid_files,
)

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "noetl-e2e-runs.md"



def test_every_valid_file_and_only_those_has_a_need():
    assert sorted(NEEDS) == sorted(valid_files()), (
        "a fixture's fate changed (docs/noetl-e2e-fates.md): classify what it needs in tests/dsl/e2e_needs.py")


def test_the_runnable_count_is_stated():
    assert len(runnable()) == RUNNABLE_COUNT


def test_the_page_is_the_table():
    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        "regenerate with `python -m tests.dsl.e2e_needs > docs/noetl-e2e-runs.md` and review the diff")


def test_each_row_is_complete_for_its_kind():
    for path, need in NEEDS.items():
        assert need.needs in KINDS and need.reason, path
        if need.needs == LOCAL:
            assert need.expect in (COMPLETED, FAILED) and need.basis, path
            if need.differs:  # a deliberate difference records the error its run fails with
                assert need.fails_with, path
            if need.fails_with:  # ... as may an expected failure (test_e2e_runs checks it)
                assert need.differs or need.expect == FAILED, path
            for setup in need.setup:
                assert NEEDS[setup].needs == LOCAL and NEEDS[setup].expect == COMPLETED, (path, setup)
        else:
            assert not (need.expect or need.basis or need.payload or need.setup or need.differs
                        or need.fails_with), path


def test_the_expected_outcome_is_noetl_s_where_its_runner_states_one():
    for path in runnable():
        validation = noetl_validation(path)
        if validation:
            assert NEEDS[path].expect == validation["execution_status"].upper(), path
            assert NEEDS[path].basis.startswith("cfg"), path
