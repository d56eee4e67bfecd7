"""The code table, its generated doc page and the codes the front end emits stay in step."""

from __future__ import annotations

import re
from pathlib import Path

from noetl_temporal.dsl.codes import CODES, RETIRED, markdown

REPO = Path(__file__).resolve().parents[2]
DSL = REPO / "noetl_temporal" / "dsl"
TESTS = Path(__file__).resolve().parent


def test_doc_page_is_generated_from_the_table():
    assert (REPO / "docs" / "validation-codes.md").read_text(encoding="utf-8") == markdown()


def test_every_code_is_emitted_and_every_emitted_code_exists():
    source = "\n".join(p.read_text(encoding="utf-8") for p in DSL.glob("*.py") if p.name != "codes.py")
    emitted = set(re.findall(r'"(NTL\d{3})"', source))
    assert emitted <= set(CODES)
    assert set(CODES) - emitted == set()


def test_a_retired_code_is_emitted_nowhere():
    source = "\n".join(p.read_text(encoding="utf-8") for p in DSL.glob("*.py") if p.name != "codes.py")
    assert set(re.findall(r'"(NTL\d{3})"', source)) & set(RETIRED) == set()
    assert set(RETIRED) and not set(RETIRED) & set(CODES)


def test_every_code_is_exercised_by_a_test():
    tested = set()
    for path in TESTS.glob("test_*.py"):
        if path.name != "test_codes.py":
            tested |= set(re.findall(r"NTL\d{3}", path.read_text(encoding="utf-8")))
    assert set(CODES) - tested == set()


def test_codes_are_stable_and_complete():
    for code, entry in CODES.items():
        assert re.fullmatch(r"NTL\d{3}", code)
        assert entry.severity in ("error", "warning")
        assert entry.meaning and entry.example and entry.fix
