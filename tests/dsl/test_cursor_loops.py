"""``loop.cursor`` (docs/semantics.md, "Cursor loops"): a right shape validates, and each
wrong one is its own located error with a fix (NTL331-NTL335)."""

from __future__ import annotations

import pytest

from .helpers import errors, find, playbook

GOOD = ("workflow:\n  - step: a\n    loop:\n      cursor: {kind: postgres, auth: pg, claim: select 1}\n"
        "      iterator: row\n      spec: {mode: cursor, max_in_flight: 2, frame: {max_rows: 50, lease_seconds: 9}}\n"
        "    tool: {kind: noop}\n")


def _loop(body: str) -> str:
    return playbook("workflow:\n  - step: a\n    loop:\n" + body + "      iterator: row\n    tool: {kind: noop}\n")


def test_noetl_s_shape_validates_for_postgres_and_duckdb():
    assert errors(playbook(GOOD)) == []
    assert errors(_loop("      cursor: {kind: duckdb, database: q.duckdb, claim: select 1}\n")) == []


@pytest.mark.parametrize("body,code,path,at", [
    ("      in: [1]\n      cursor: {kind: postgres, auth: pg, claim: x}\n", "NTL331", "workflow[0].loop.cursor", "cursor:"),
    ("      cursor: select 1\n", "NTL332", "workflow[0].loop.cursor", "select 1"),
    ("      cursor: {kind: postgres, claim: select 1}\n", "NTL332", "workflow[0].loop.cursor", "cursor:"),
    ("      cursor: {kind: snowflake, claim: x}\n", "NTL333", "workflow[0].loop.cursor.kind", "snowflake"),
    ("      cursor: {kind: duckdb}\n", "NTL334", "workflow[0].loop.cursor", "cursor:"),
    ("      cursor: {kind: duckdb, claim: x}\n      spec: {frame: {max_rows: 0}}\n", "NTL335",
     "workflow[0].loop.spec.frame.max_rows", "0}"),
    ("      cursor: {kind: duckdb, claim: x}\n      spec: {mode: parallel}\n", "NTL335", "workflow[0].loop.spec.mode",
     "parallel"),
    ("      in: [1]\n      mode: cursor\n", "NTL335", "workflow[0].loop.mode", "cursor"),
])
def test_a_wrong_shape_is_its_own_located_error(body, code, path, at):
    text = _loop(body)
    (diag,) = errors(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == (code, path, find(text, at))
    assert diag.fix
