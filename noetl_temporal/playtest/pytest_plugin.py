"""A pytest fixture for playbook tests kept in pytest (docs/testing-playbooks.md, "From pytest").

Opt in from a ``conftest.py``::

    pytest_plugins = ["noetl_temporal.playtest.pytest_plugin"]

then ``playbook_case(path, payload=..., mocks=..., kinds=..., real=..., expect=...)`` runs
one case in the default mode (the engine, mocked tools, virtual time) and returns its
:class:`CaseOutcome`; ``playbook_test_file(path)`` runs every case of a test file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .checks import Failure, check
from .driver import Actual, load, run_case
from .spec import case_from_data

__all__ = ["CaseOutcome", "playbook_case", "playbook_test_file", "run_playbook_case"]


@dataclass
class CaseOutcome:
    """What one case's run showed, and the expectations (``expect=``) it failed."""

    actual: Actual
    failures: list[Failure] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.actual.status

    @property
    def route(self) -> list[str]:
        return self.actual.route

    @property
    def ctx(self) -> dict[str, Any]:
        return self.actual.ctx

    @property
    def results(self) -> dict[str, Any]:
        return {name: record.get("result") for name, record in self.actual.steps.items()}

    @property
    def attempts(self) -> dict[str, int]:
        return self.actual.attempts

    @property
    def event_types(self) -> list[str]:
        return [e.get("event_type", "") for e in self.actual.events]

    @property
    def reason(self) -> str:
        return self.actual.reason

    def raise_failures(self) -> None:
        """Fail the test with every failed expectation (and why the case could not finish)."""
        lines = ([f"the case could not run to its end: {self.actual.problem}"] if self.actual.problem else []) + \
            [f.text() for f in self.failures]
        if lines:
            pytest.fail("\n".join(lines), pytrace=False)


def run_playbook_case(playbook: str | Path, *, payload: dict[str, Any] | None = None,
                      mocks: dict[str, Any] | None = None, kinds: dict[str, Any] | None = None,
                      real: list[str] | None = None, expect: dict[str, Any] | None = None) -> CaseOutcome:
    """Run one case of ``playbook``; ``mocks``, ``kinds``, ``real`` and ``expect`` as in a test file."""
    data: dict[str, Any] = {"payload": payload or {}, "expect": expect or {}}
    for key, value in (("mocks", mocks), ("kinds", kinds), ("real", real)):
        if value is not None:
            data[key] = value
    case = case_from_data(data)
    loaded, source = load(str(playbook))
    actual = run_case(case, loaded, source)
    return CaseOutcome(actual, check(case, actual) if actual.problem is None else [])


def _run_test_file(path: str | Path) -> None:
    import io
    import time

    from .session import print_report, run_files

    started = time.perf_counter()
    reports = run_files([str(path)])
    out = io.StringIO()
    _, failed, invalid = print_report(reports, time.perf_counter() - started, out)
    if failed or invalid:
        pytest.fail(out.getvalue(), pytrace=False)


@pytest.fixture
def playbook_case() -> Callable[..., CaseOutcome]:
    """``playbook_case(path, payload=..., mocks=..., expect=...)`` -> :class:`CaseOutcome`."""
    return run_playbook_case


@pytest.fixture
def playbook_test_file() -> Callable[[str | Path], None]:
    """``playbook_test_file(path)``: run every case of a test file; fail with the report."""
    return _run_test_file
