"""The test file of ``noetl-temporal test``: read, checked and located (docs/testing-playbooks.md).

A test file (``*.test.yaml``) names one playbook and holds cases; each case gives a
payload, mocks (per ``step.task``, per step, or per tool kind), the tool kinds that run for
real, and expectations. It is read with the playbook loader's YAML parser
(``dsl.yaml_loader``), which keeps where every key and value was written, so every
mistake in the file, and every failed expectation later, is reported at its
``file:line:col``. Nothing here raises for a bad file: :func:`load_test_file` returns the
file or the list of its problems.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dsl import paths
from ..dsl.diagnostics import Reporter, did_you_mean, kind_of
from ..dsl.yaml_loader import parse_yaml
from ..engine.status_layers import ExecutionStatus
from ..tool_kinds import TOOL_KINDS

__all__ = ["Problem", "Response", "Mock", "Expectation", "Case", "TestFile", "load_test_file", "case_from_data",
           "parse_duration",
           "FILE_KEYS", "CASE_KEYS", "EXPECT_KEYS", "RESPONSE_KEYS"]

FILE_KEYS = ("playbook", "cases", "description")
CASE_KEYS = ("name", "description", "payload", "mocks", "kinds", "real", "expect")
EXPECT_KEYS = ("status", "steps", "route", "results", "ctx", "events", "attempts", "error")
RESPONSE_KEYS = ("result", "error", "delay")
ERROR_KEYS = ("type", "kind", "message", "retryable", "code", "retry_after")
#: the statuses a run ends with
END_STATUSES = (ExecutionStatus.COMPLETED.value, ExecutionStatus.FAILED.value, ExecutionStatus.CANCELLED.value)


def located(file: str, line: int | None, col: int | None) -> str:
    """``file:line:col``, as far as they are known."""
    where = file
    if line is not None:
        where += f":{line}"
        if col is not None:
            where += f":{col}"
    return where


@dataclass(frozen=True)
class Problem:
    """A mistake in a test file, or a failed expectation: where, what, and the fix."""

    file: str
    line: int | None
    col: int | None
    message: str
    fix: str | None = None

    def location(self) -> str:
        return located(self.file, self.line, self.col)

    def __str__(self) -> str:
        return f"{self.location()}: {self.message}" + (f" — fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class Response:
    """One attempt's answer of a mocked task: a result, or an error; ``delay`` seconds of
    (virtual) time it took."""

    result: Any = None
    error: dict[str, Any] | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Mock:
    """What a mocked task answers, attempt by attempt (the last answer repeats)."""

    key: str
    responses: tuple[Response, ...]
    line: int | None = None
    col: int | None = None

    def answer(self, attempt: int) -> Response:
        return self.responses[min(attempt, len(self.responses)) - 1]


@dataclass(frozen=True)
class Expectation:
    """One expected fact of a run: ``what`` (an ``expect:`` key), for ``key`` (a step, a
    ctx path, a task) when the fact has one; ``mode`` ``equals`` or ``subset``."""

    what: str
    key: str | None
    value: Any
    line: int | None
    col: int | None
    mode: str = "equals"

    @property
    def label(self) -> str:
        return f"expect.{self.what}" + (f".{self.key}" if self.key is not None else "")


@dataclass
class Case:
    __test__ = False

    name: str
    file: str
    line: int | None
    payload: dict[str, Any] = field(default_factory=dict)
    mocks: dict[str, Mock] = field(default_factory=dict)      # "step.task" or "step" -> mock
    kinds: dict[str, Mock] = field(default_factory=dict)      # tool kind -> mock
    real: frozenset[str] = frozenset()
    expectations: list[Expectation] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass
class TestFile:
    __test__ = False   # not a pytest class

    path: str
    playbook: str           # the playbook's file, resolved against the test file's folder
    playbook_line: int | None
    cases: list[Case]


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: Any) -> float | None:
    """Seconds of ``value``: a number of seconds, or text like ``500ms``, ``90s``, ``3h``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value >= 0 else None
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT[match.group(2)]
    return None


class _Reader:
    """Walks the parsed file, collecting problems located by JSON path."""

    def __init__(self, file: str, reporter: Reporter) -> None:
        self.file = file
        self.reporter = reporter
        self.problems: list[Problem] = []

    def where(self, path: str, *, value: bool = False) -> tuple[int | None, int | None]:
        _, pos = self.reporter.locate(path, value=value)
        return pos if pos is not None else (None, None)

    def fail(self, path: str, message: str, fix: str | None = None, *, value: bool = False) -> None:
        line, col = self.where(path, value=value)
        label = f"{path}: " if path else ""
        self.problems.append(Problem(self.file, line, col, label + message, fix))

    def mapping(self, value: Any, path: str, keys: tuple[str, ...] | None = None) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(path, f"expected a mapping, got {kind_of(value)}", value=True)
            return None
        if keys is not None:
            for key in value:
                if key not in keys:
                    self.fail(paths.join(path, key), f"unknown key {key!r}{did_you_mean(key, keys)}",
                              f"use one of {', '.join(keys)}")
        return value


def load_test_file(path: str | Path) -> TestFile | list[Problem]:
    """The test file at ``path``, or every problem found in it."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [Problem(file, None, None, f"cannot read the test file: {exc}")]
    reporter = Reporter(source=file)
    parsed = parse_yaml(text, reporter)
    if parsed is None:  # the YAML parser's own diagnostics, with our wording (no NTL codes)
        return [Problem(file, d.line, d.col, d.message.replace("the playbook is empty", "the test file is empty"))
                for d in reporter.errors] or [Problem(file, None, None, "not a YAML document")]
    reporter.positions, reporter.value_positions = parsed.positions, parsed.value_positions
    reader = _Reader(file, reporter)
    root = reader.mapping(parsed.data, "", FILE_KEYS)
    if root is None:
        return reader.problems
    playbook = root.get("playbook")
    if not isinstance(playbook, str) or not playbook.strip():
        reader.fail("playbook" if "playbook" in root else "", "names no playbook",
                    "add `playbook: <file>` (relative to this test file)", value=True)
        resolved = ""
    else:
        resolved = str((Path(file).parent / playbook).resolve()) if not Path(playbook).is_absolute() else playbook
        if not Path(resolved).is_file():
            reader.fail("playbook", f"no playbook file {playbook!r} (looked for {resolved})",
                        "give the playbook's path relative to this test file", value=True)
    cases = root.get("cases")
    out: list[Case] = []
    if not isinstance(cases, list) or not cases:
        reader.fail("cases" if "cases" in root else "", "has no cases",
                    "add `cases:` with a list of cases, each with a name and an expect", value=True)
    else:
        names: set[str] = set()
        for index, data in enumerate(cases):
            case = _case(reader, data, paths.join("cases", index), file)
            if case is None:
                continue
            if case.name in names:
                reader.fail(paths.join(paths.join("cases", index), "name"), f"a second case named {case.name!r}",
                            "give every case its own name", value=True)
            names.add(case.name)
            out.append(case)
    if reader.problems:
        return sorted(reader.problems, key=lambda p: (p.line or 0, p.col or 0))
    return TestFile(path=file, playbook=resolved, playbook_line=reader.where("playbook")[0], cases=out)


def case_from_data(data: dict[str, Any], file: str = "<pytest>") -> Case:
    """A case from Python data (the pytest fixture's), checked like a test file's; a
    ``ValueError`` lists its mistakes (located by path: there is no file to point into)."""
    reader = _Reader(file, Reporter(source=file))
    case = _case(reader, {"name": "case", "expect": {}, **data}, "", file)
    if reader.problems or case is None:
        raise ValueError("invalid case:\n" + "\n".join(f"  {p.message}" + (f" — fix: {p.fix}" if p.fix else "")
                                                        for p in reader.problems))
    return case


def _case(reader: _Reader, data: Any, path: str, file: str) -> Case | None:
    case = reader.mapping(data, path, CASE_KEYS)
    if case is None:
        return None
    name = case.get("name")
    if not isinstance(name, str) or not name.strip():
        reader.fail(paths.join(path, "name") if "name" in case else path, "a case needs a name (text)",
                    value=True)
        name = f"case {path}"
    out = Case(name=name, file=file, line=reader.where(path)[0])
    payload = case.get("payload", {})
    if reader.mapping(payload if payload is not None else {}, paths.join(path, "payload")) is not None:
        out.payload = dict(payload or {})
    for section, table in (("mocks", out.mocks), ("kinds", out.kinds)):
        given = case.get(section)
        if given is None:
            continue
        where = paths.join(path, section)
        mocks = reader.mapping(given, where)
        for key, value in (mocks or {}).items():
            mock = _mock(reader, value, paths.join(where, key), key)
            if section == "kinds" and key not in TOOL_KINDS:
                reader.fail(paths.join(where, key), f"no tool kind {key!r}{did_you_mean(key, TOOL_KINDS)}",
                            f"name one of {', '.join(TOOL_KINDS)}")
            if mock is not None:
                table[key] = mock
    real = case.get("real")
    if real is not None:
        where = paths.join(path, "real")
        if not isinstance(real, list) or not all(isinstance(k, str) for k in real):
            reader.fail(where, f"expected a list of tool kinds, got {kind_of(real)}", value=True)
        else:
            for index, kind in enumerate(real):
                if kind not in TOOL_KINDS:
                    reader.fail(paths.join(where, index), f"no tool kind {kind!r}{did_you_mean(kind, TOOL_KINDS)}",
                                f"name one of {', '.join(TOOL_KINDS)}")
            out.real = frozenset(real)
    expect = case.get("expect")
    if expect is None:
        reader.fail(path, "a case needs an `expect:` (what the run must show)",
                    "add e.g. `expect: {status: COMPLETED}`")
    else:
        out.expectations = _expectations(reader, expect, paths.join(path, "expect"))
    return out


def _mock(reader: _Reader, value: Any, path: str, key: str) -> Mock | None:
    items = value if isinstance(value, list) else [value]
    if not items:
        reader.fail(path, "an empty list of answers", "give at least one answer, e.g. `{result: ...}`", value=True)
        return None
    responses = []
    for index, item in enumerate(items):
        where = paths.join(path, index) if isinstance(value, list) else path
        answer = reader.mapping(item, where, RESPONSE_KEYS)
        if answer is None:
            continue
        if "result" in answer and "error" in answer:
            reader.fail(where, "an answer is a `result` or an `error`, not both")
        delay = parse_duration(answer.get("delay", 0))
        if delay is None:
            reader.fail(paths.join(where, "delay"), f"not a duration: {answer.get('delay')!r}",
                        "write seconds (2.5) or a number with a unit: 500ms, 90s, 10m, 3h, 1d", value=True)
            delay = 0.0
        error = _error(reader, answer["error"], paths.join(where, "error")) if "error" in answer else None
        responses.append(Response(result=answer.get("result"), error=error, delay=delay))
    line, col = reader.where(path)
    return Mock(key=key, responses=tuple(responses), line=line, col=col) if responses else None


def _error(reader: _Reader, value: Any, path: str) -> dict[str, Any] | None:
    if isinstance(value, str):
        return {"kind": "mock", "retryable": False, "code": None, "message": value}
    data = reader.mapping(value, path, ERROR_KEYS)
    if data is None:
        return None
    kind = data.get("type", data.get("kind", "mock"))
    message = data.get("message", f"mocked {kind} error")
    if not isinstance(kind, str) or not isinstance(message, str):
        reader.fail(path, "an error's `type` and `message` are text", value=True)
        return None
    error: dict[str, Any] = {"kind": kind, "retryable": bool(data.get("retryable", False)),
                             "code": data.get("code"), "message": message}
    if "retry_after" in data:
        seconds = parse_duration(data["retry_after"])
        if seconds is None:
            reader.fail(paths.join(path, "retry_after"), "not a duration", value=True)
        else:
            error["retry_after"] = seconds
    return error


def _expectations(reader: _Reader, value: Any, path: str) -> list[Expectation]:
    expect = reader.mapping(value, path, EXPECT_KEYS)
    if expect is None:
        return []
    out: list[Expectation] = []

    def add(what: str, key: str | None, val: Any, where: str, mode: str = "equals") -> None:
        line, col = reader.where(where, value=True)
        out.append(Expectation(what, key, val, line, col, mode))

    for what, val in expect.items():
        where = paths.join(path, what)
        if what == "status":
            if not isinstance(val, str) or val.upper() not in END_STATUSES:
                reader.fail(where, f"not a final status: {val!r}", f"use one of {', '.join(END_STATUSES)}",
                            value=True)
            else:
                add(what, None, val.upper(), where)
        elif what in ("route", "events"):
            if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
                reader.fail(where, f"expected a list of names, got {kind_of(val)}", value=True)
            else:
                add(what, None, val, where)
        elif what == "error":
            if not isinstance(val, str):
                reader.fail(where, "expected text the run's failure reason contains", value=True)
            else:
                add(what, None, val, where)
        elif what in ("steps", "attempts"):
            table = reader.mapping(val, where)
            for key, count in (table or {}).items():
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    reader.fail(paths.join(where, key), f"expected a count (0, 1, 2 ...), got {count!r}",
                                value=True)
                else:
                    add(what, key, count, paths.join(where, key))
        elif what in ("results", "ctx"):
            table = reader.mapping(val, where)
            for key, expected in (table or {}).items():
                at = paths.join(where, key)
                mode = "equals"
                if isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)) in ("equals", "subset"):
                    mode = next(iter(expected))
                    expected = expected[mode]
                    at = paths.join(at, mode)
                add(what, key, expected, at, mode)
    return out
