"""No test reads outside the repository: a fresh clone runs the same suite as CI.

The playbooks the tests use are copied under tests/corpus (tests/corpus/README.md). Two
checks keep it so: a scan of every test, benchmark and script source for a path built to
leave the repository (``.. /``, a ``shared`` folder beside the checkout, a parent of the
repository root), and the audit hook of tests/support/confine.py, which fails a test that
opens or lists the data beside the checkout at run time.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.support import confine
from tests.support.corpus import NOETL, NOETL_E2E

REPO = Path(__file__).resolve().parents[1]
#: what the suite runs or imports (tests/benchmarks imports benchmarks/, and its probes)
SCANNED = ("tests", "benchmarks")
#: folder names that only exist beside a checkout on a developer's machine
OUTSIDE_NAMES = {"..", "shared"}
#: the guard names the places it refuses; it reads nothing there
EXEMPT = {REPO / "tests" / "support" / "confine.py", Path(__file__).resolve()}


def _escapes(node: ast.AST, depth: int) -> str | None:
    """Why ``node`` builds a path outside the repository, or None. ``depth`` is how many
    folders the file sits below the repository root."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # path / "shared"
        for side in (node.left, node.right):
            if isinstance(side, ast.Constant) and side.value in OUTSIDE_NAMES:
                return f'a path joined with "{side.value}"'
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        if "../shared" in text or "/work/" + "shared" in text or text.startswith(("../", "/work/")):
            return f"the path {text!r}"
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "parents" and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, int) and node.slice.value > depth:
        return f"parents[{node.slice.value}] of a file {depth} folders deep"
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        base = node.value
        if isinstance(base, ast.Name) and base.id in {"REPO", "ROOT", "REPO_ROOT"}:
            return f"{base.id}.parent"
        if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Attribute) \
                and base.value.attr == "parents" and isinstance(base.slice, ast.Constant) \
                and base.slice.value == depth:
            return f"parents[{depth}].parent (the repository root's parent)"
    return None


def _sources() -> list[Path]:
    return [p for top in SCANNED for p in sorted((REPO / top).rglob("*.py"))
            if p.resolve() not in EXEMPT and ".venv" not in p.parts]


def escaping_paths(path: Path) -> list[str]:
    """``file:line: what`` for each place in ``path`` that builds a path outside the repo."""
    depth = len(path.relative_to(REPO).parts) - 1
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = path.relative_to(REPO)
    return [f"{rel}:{node.lineno}: {why}" for node in ast.walk(tree)
            if (why := _escapes(node, depth)) is not None]


def test_no_test_builds_a_path_outside_the_repository():
    found = [hit for path in _sources() for hit in escaping_paths(path)]
    assert not found, (
        "these build paths outside the repository, which a fresh clone does not have; copy what "
        "they read under tests/ (tests/corpus/README.md) and read it from there:\n" + "\n".join(found))


@pytest.mark.parametrize("code, why", [
    ('C = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"', 'a path joined with ".."'),
    ('C = REPO.parent / "shared" / "corpus" / "noetl"', "REPO.parent"),
    ('C = Path(__file__).resolve().parents[2].parent / "x"', "parents[2].parent"),
    ('C = Path(__file__).resolve().parents[3] / "x"', "parents[3] of a file 2 folders deep"),
    ('C = Path("../shared/corpus")', "the path '../shared/corpus'"),
])
def test_the_scan_finds_each_way_out(tmp_path, code, why):
    """The ways the suite used to reach ../shared/corpus are each found (a file two folders
    below the root, like tests/dsl/helpers.py)."""
    fake = REPO / "tests" / "dsl" / "helpers.py"
    tree = ast.parse(code)
    assert any(why in (_escapes(node, 2) or "") for node in ast.walk(tree)), (code, why)
    assert escaping_paths(fake) == []


def test_a_read_beside_the_checkout_fails_at_run_time():
    """The audit hook refuses an open or a listing of ../shared before it happens, whether
    or not that folder exists on this machine."""
    beside = Path(confine.FORBIDDEN[0])
    with pytest.raises(confine.ReadOutsideRepository, match="outside the repository"):
        open(beside / "corpus" / "noetl" / "INDEX.md", encoding="utf-8")
    with pytest.raises(confine.ReadOutsideRepository):
        os.listdir(beside / "corpus")  # (Path.glob stats first: no event when the folder is absent)
    confine.check(REPO / "tests" / "shared-name-inside-the-repo.txt")  # inside: allowed


def test_the_corpus_is_in_the_repository():
    assert REPO in NOETL.resolve().parents and REPO in NOETL_E2E.resolve().parents
    assert len(list(NOETL.glob("*.yaml"))) == 44 and (NOETL / "INDEX.md").is_file()
    assert len(list((NOETL_E2E / "fixtures").rglob("*.yaml"))) == 167
    for licence in (NOETL_E2E / "LICENSE", NOETL / "LICENSE.noetl-e2e", NOETL / "LICENSE.noetl"):
        assert licence.is_file(), licence
