"""Small builders shared by the dsl tests: playbook text, diagnostics, positions."""

from __future__ import annotations

import textwrap

from noetl_temporal.dsl import Diagnostic, load_playbook_text, validate_text
from tests.support.corpus import NOETL

CORPUS = NOETL  # the users' playbooks, copied into tests/corpus (tests/support/corpus.py)

HEADER = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\n"


def playbook(body: str) -> str:
    """A playbook text: the fixed 4-line header followed by ``body`` (dedented)."""
    return HEADER + textwrap.dedent(body).lstrip("\n")


def diags(text: str) -> list[Diagnostic]:
    return validate_text(text, "pb.yaml")


def errors(text: str) -> list[Diagnostic]:
    return [d for d in diags(text) if d.is_error]


def warnings(text: str) -> list[Diagnostic]:
    return [d for d in diags(text) if not d.is_error]


def codes(items: list[Diagnostic]) -> list[str]:
    return [d.code for d in items]


def find(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based (line, col) of the ``nth`` occurrence of ``needle`` in ``text``."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    before = text[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def load(body: str):
    return load_playbook_text(playbook(body), "pb.yaml")
