"""Docstrings stay short and point at docs/ pages that exist (CONTRIBUTING.md, "Code").

1. A module docstring of ``noetl_temporal`` says what the module does and why in at most
   :data:`MAX_MODULE_DOC_LINES` lines; the design it belongs to is a docs/ page it links
   to (``See docs/<page>.md#<section>``).
2. Every ``docs/<page>.md`` named in a docstring or comment of the package, the benchmarks
   or the tests is a page that exists; its ``#anchor`` is a heading's, and a section named
   after it in quotes (``docs/tools.md, "The fork server"``) is in a heading or a paragraph's
   bold title of that page.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "noetl_temporal"
#: where docs/ links are checked: the installed package, the benchmarks and the tests
LINKED_FROM = ("noetl_temporal", "benchmarks", "tests")

#: the longest module docstring, in lines (CONTRIBUTING.md, "Code", says why)
MAX_MODULE_DOC_LINES = 25
#: modules whose docstring is a contract longer than that, and why
LONG_ON_PURPOSE = {
    "noetl_temporal/errors.py": "its docstring draws the exception tree tests/test_errors.py reads",
}

LINK = re.compile(r"\bdocs/([\w./-]+?\.md)(#[\w-]+)?(?:\)?,?\s*\(?\"([^\"]+)\")?")
#: a paragraph's bold title (``**Task-side renders.**``), a list item's or an anchored one's too
BOLD_TITLE = re.compile(r"(?:<a id=\"[^\"]*\"></a>)?(?:[-*] +)?\*\*(.+?)\*\*")


def _sources(*folders: str) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((REPO / folder).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _docstrings(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc


def _comments(text: str) -> Iterator[str]:
    """Each block of comments on consecutive lines, as one text."""
    block: list[str] = []
    last = 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.COMMENT:
            continue
        if block and token.start[0] != last + 1:
            yield " ".join(block)
            block = []
        block.append(token.string.lstrip("#").strip())
        last = token.start[0]
    if block:
        yield " ".join(block)


def prose(path: Path) -> Iterator[str]:
    """The docstrings and comments of one source file."""
    text = path.read_text(encoding="utf-8")
    for doc in _docstrings(ast.parse(text)):
        yield re.sub(r"\s+", " ", doc)
    yield from _comments(text)


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@cache
def anchors(page: str) -> frozenset[str]:
    """The anchors of a docs/ page's headings (fenced code left out; repeats get ``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    names = set()
    fenced = False
    for line in (REPO / "docs" / page).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"#{1,6} (.+)", line)
        if fenced or not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        names.add(f"{base}-{count}" if count else base)
        seen[base] = count + 1
    return frozenset(names)


@cache
def sections(page: str) -> tuple[str, ...]:
    """A page's headings and paragraphs' bold titles, lower case, without backticks."""
    names = []
    for line in (REPO / "docs" / page).read_text(encoding="utf-8").splitlines():
        found = re.match(r"#{1,6} (.+)", line) or BOLD_TITLE.match(line)
        if found:
            names.append(found.group(1).replace("`", "").lower())
    return tuple(names)


def _names_a_section(page: str, quoted: str) -> bool:
    wanted = quoted.replace("`", "").strip().rstrip(".").lower()
    return any(wanted in name for name in sections(page))


def broken_links(text: str) -> list[str]:
    """The docs/ links in ``text`` whose page or anchor does not exist."""
    broken = []
    for match in LINK.finditer(text):
        page, anchor, quoted = match.groups()
        if not (REPO / "docs" / page).is_file():
            broken.append(f"docs/{page} (no such page)")
        elif anchor and anchor[1:] not in anchors(page):
            broken.append(f"docs/{page}{anchor} (no such heading)")
        elif quoted and not _names_a_section(page, quoted):
            broken.append(f'docs/{page}, "{quoted}" (no such heading or bold title)')
    return broken


def doc_lines(doc: str) -> int:
    return len(doc.strip("\n").splitlines())


def test_module_docstrings_are_short() -> None:
    long = {}
    for path in _sources("noetl_temporal"):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc and doc_lines(doc) > MAX_MODULE_DOC_LINES and _rel(path) not in LONG_ON_PURPOSE:
            long[_rel(path)] = doc_lines(doc)
    assert not long, (
        f"module docstrings over {MAX_MODULE_DOC_LINES} lines: {long}. Say what the module does "
        "and why in a paragraph, move the design into its docs/ page and link it: "
        "'See docs/<page>.md#<section>' (CONTRIBUTING.md, 'Code')"
    )


def test_the_long_ones_on_purpose_exist_and_are_long() -> None:
    for name in LONG_ON_PURPOSE:
        doc = ast.get_docstring(ast.parse((REPO / name).read_text(encoding="utf-8")), clean=False) or ""
        assert doc_lines(doc) > MAX_MODULE_DOC_LINES, f"{name} is short now: take it out of LONG_ON_PURPOSE"


@pytest.mark.parametrize("folder", LINKED_FROM)
def test_docs_links_in_docstrings_and_comments_exist(folder: str) -> None:
    broken = {}
    for path in _sources(folder):
        found = [link for text in prose(path) for link in broken_links(text)]
        if found:
            broken[_rel(path)] = sorted(set(found))
    assert not broken, f"docs/ links to nothing: {broken}"


def test_the_link_check_can_fail() -> None:
    assert broken_links("see docs/semantics.md#retries-are-temporal-retries and docs/tools.md") == []
    assert broken_links("See docs/nowhere.md") == ["docs/nowhere.md (no such page)"]
    assert broken_links("docs/tools.md#no-such-heading.") == [
        "docs/tools.md#no-such-heading (no such heading)"
    ]
    assert slug("The fast path: `spec.local`") == "the-fast-path-speclocal"
    assert (
        slug("Starting executions through the API (issue 30)")
        == "starting-executions-through-the-api-issue-30"
    )
    assert broken_links('(docs/durability.md, "Task-side renders")') == []  # a bold title
    assert broken_links('docs/tools.md ("The fork server")') == []  # a heading
    assert broken_links('docs/durability.md, "Bounded by construction"') == [
        'docs/durability.md, "Bounded by construction" (no such heading or bold title)'
    ]
