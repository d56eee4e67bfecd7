"""Find test files, run their cases, report like pytest, write JUnit XML (docs/testing-playbooks.md)."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import NoetlError, PlaybookInvalid
from .checks import Failure, check
from .spec import Case, Problem, TestFile, load_test_file

__all__ = ["CaseReport", "FileReport", "discover", "run_files", "print_report", "write_junit", "SUFFIXES"]

SUFFIXES = (".test.yaml", ".test.yml")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox"}


@dataclass
class CaseReport:
    case: Case
    failures: list[Failure] = field(default_factory=list)
    problem: str | None = None      # the case could not run to its end
    seconds: float = 0.0
    actual: Any = None

    @property
    def passed(self) -> bool:
        return not self.failures and self.problem is None


@dataclass
class FileReport:
    path: str
    problems: list[Problem] = field(default_factory=list)   # the file itself is wrong: no case ran
    cases: list[CaseReport] = field(default_factory=list)


def discover(given: Iterable[str]) -> tuple[list[str], list[str]]:
    """The test files under ``given`` (files as named, folders searched for ``*.test.yaml``),
    and the arguments that are neither."""
    found: list[str] = []
    missing: list[str] = []
    for name in given:
        path = Path(name)
        if path.is_file():
            found.append(str(path))
        elif path.is_dir():
            for candidate in sorted(path.rglob("*")):
                if candidate.is_file() and candidate.name.endswith(SUFFIXES) and \
                        not _SKIP_DIRS.intersection(candidate.relative_to(path).parts[:-1]):
                    found.append(str(candidate))
        else:
            missing.append(name)
    return list(dict.fromkeys(found)), missing


#: runs one case: (case, playbook file) -> (its facts, a problem or None)
CaseRunner = Callable[[Case, str], tuple[Any, str | None]]


def default_runner(case: Case, playbook_file: str) -> tuple[Any, str | None]:
    from . import driver

    playbook, source = _loaded(playbook_file)
    actual = driver.run_case(case, playbook, source)
    return actual, actual.problem


_PLAYBOOKS: dict[str, Any] = {}


def _loaded(path: str) -> Any:
    from . import driver

    if path not in _PLAYBOOKS:
        _PLAYBOOKS[path] = driver.load(path)
    return _PLAYBOOKS[path]


def run_files(files: list[str], runner: CaseRunner | None = None,
              on_case: Callable[[CaseReport], None] | None = None) -> list[FileReport]:
    run = runner or default_runner
    reports = []
    for path in files:
        report = FileReport(path)
        reports.append(report)
        loaded = load_test_file(path)
        if not isinstance(loaded, TestFile):
            report.problems = loaded
            continue
        try:
            _loaded(loaded.playbook)
        except PlaybookInvalid as exc:
            report.problems = [Problem(path, loaded.playbook_line, None,
                                       f"playbook: {loaded.playbook} is not a valid playbook (`noetl-temporal "
                                       "validate` checks it):\n" +
                                       "\n".join(f"    {d}" for d in exc.diagnostics if d.is_error))]
            continue
        except NoetlError as exc:
            report.problems = [Problem(path, loaded.playbook_line, None, f"playbook: {loaded.playbook}: {exc}")]
            continue
        report.problems = _unknown_mock_targets(loaded, _loaded(loaded.playbook)[0])
        if report.problems:
            continue
        for case in loaded.cases:
            started = time.perf_counter()
            try:
                actual, problem = run(case, loaded.playbook)
            except Exception as exc:  # a server gone, a bug: this case's failure, not a traceback
                actual, problem = None, f"{type(exc).__name__}: {exc}"
            out = CaseReport(case, problem=problem, actual=actual)
            if problem is None:
                out.failures = check(case, actual)
            out.seconds = time.perf_counter() - started
            report.cases.append(out)
            if on_case is not None:
                on_case(out)
    return reports


def _unknown_mock_targets(test_file: TestFile, playbook: Any) -> list[Problem]:
    """Mocks whose ``step`` or ``step.task`` names nothing in the playbook (a typo would
    otherwise leave the task unmocked, or silently mock nothing)."""
    from ..dsl.diagnostics import did_you_mean

    steps = playbook.step_by_name()
    problems = []
    for case in test_file.cases:
        for key, mock in case.mocks.items():
            step_name, _, task = key.partition(".")
            step = steps.get(step_name)
            if step is None:
                problems.append(Problem(test_file.path, mock.line, mock.col,
                                        f"mock {key!r}: the playbook has no step {step_name!r}"
                                        f"{did_you_mean(step_name, steps)}",
                                        "key a mock by `step` or `step.task`"))
            elif task and task not in {t.name for t in step.tool}:
                names = [t.name for t in step.tool]
                problems.append(Problem(test_file.path, mock.line, mock.col,
                                        f"mock {key!r}: step {step_name!r} has no task {task!r}"
                                        f"{did_you_mean(task, names)}", f"its tasks: {', '.join(names)}"))
    return problems


def case_line(report: CaseReport) -> str:
    verdict = "PASSED" if report.passed else "FAILED"
    return f"{report.case.id} {verdict} ({report.seconds * 1000:.0f} ms)"


def print_report(reports: list[FileReport], seconds: float, out: TextIO) -> tuple[int, int, int]:
    """The failures section and the summary line; (passed, failed, invalid files)."""
    failed = [c for r in reports for c in r.cases if not c.passed]
    invalid = [r for r in reports if r.problems]
    if failed or invalid:
        out.write("\n" + " FAILURES ".center(72, "=") + "\n")
    for report in invalid:
        out.write(f" {report.path} (invalid test file) ".center(72, "_") + "\n")
        for problem in report.problems:
            out.write(f"{problem}\n")
    for case in failed:
        out.write(f" {case.case.id} ".center(72, "_") + "\n")
        if case.problem is not None:
            out.write(f"{case.case.file}:{case.case.line}: the case could not run to its end: {case.problem}\n")
        for failure in case.failures:
            out.write(failure.text() + "\n")
    passed = sum(1 for r in reports for c in r.cases if c.passed)
    parts = [f"{passed} passed"] + ([f"{len(failed)} failed"] if failed else []) + \
        ([f"{len(invalid)} invalid file(s)"] if invalid else [])
    out.write(f" {', '.join(parts)} in {seconds:.2f}s ".center(72, "=") + "\n")
    return passed, len(failed), len(invalid)


def write_junit(reports: list[FileReport], path: str, seconds: float) -> None:
    """JUnit XML for CI: one ``testcase`` per case (``classname``: its file); an invalid
    file is one errored test case."""
    suite = ET.Element("testsuite", name="noetl-temporal test")
    tests = failures = errors = 0
    for report in reports:
        if report.problems:
            tests += 1
            errors += 1
            element = ET.SubElement(suite, "testcase", classname=report.path, name="(test file)", time="0")
            error = ET.SubElement(element, "error", message="invalid test file")
            error.text = "\n".join(str(p) for p in report.problems)
        for case in report.cases:
            tests += 1
            element = ET.SubElement(suite, "testcase", classname=report.path, name=case.case.name,
                                    time=f"{case.seconds:.3f}")
            if not case.passed:
                failures += 1
                lines = ([f"the case could not run to its end: {case.problem}"] if case.problem else []) + \
                    [f.text() for f in case.failures]
                failure = ET.SubElement(element, "failure", message=lines[0].splitlines()[0])
                failure.text = "\n".join(lines)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("time", f"{seconds:.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode") + "\n", encoding="utf-8")
