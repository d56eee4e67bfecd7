"""A case's expectations against what its run showed: each failed one located in the test file."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from .spec import Case, Expectation, located

__all__ = ["Failure", "check", "subset_of"]

_MISSING = object()


@dataclass(frozen=True)
class Failure:
    """One failed expectation: where it is written, what it says, what the run showed."""

    file: str
    line: int | None
    col: int | None
    label: str
    message: str
    expected: Any = None
    actual: Any = None
    show_diff: bool = False

    def location(self) -> str:
        return located(self.file, self.line, self.col)

    def text(self) -> str:
        lines = [f"{self.location()}: {self.label}: {self.message}"]
        if self.show_diff:
            lines += ["    " + line for line in diff(self.expected, self.actual)]
        return "\n".join(lines)


def _dump(value: Any) -> list[str]:
    if value is _MISSING:
        return ["<absent>"]
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False).splitlines()


def diff(expected: Any, actual: Any) -> list[str]:
    """A unified diff of the two values as JSON (``-`` expected, ``+`` actual)."""
    return list(difflib.unified_diff(_dump(expected), _dump(actual), "expected", "actual", lineterm="", n=3))


def subset_of(expected: Any, actual: Any) -> bool:
    """``expected`` is in ``actual``: a mapping's keys (recursively), a list's items in order
    (as a prefix-free subsequence), other values equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset_of(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return False
        position = 0
        for item in expected:
            while position < len(actual) and not subset_of(item, actual[position]):
                position += 1
            if position == len(actual):
                return False
            position += 1
        return True
    return bool(expected == actual and type(expected) is type(actual)) or (
        isinstance(expected, int | float) and not isinstance(expected, bool)
        and isinstance(actual, int | float) and not isinstance(actual, bool) and expected == actual)


def _equal(expected: Any, actual: Any) -> bool:
    return subset_of(expected, actual) and subset_of(actual, expected) if isinstance(expected, dict | list) \
        else subset_of(expected, actual)


def _ctx_value(ctx: dict[str, Any], key: str) -> Any:
    if key in ctx:
        return ctx[key]
    value: Any = ctx
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _events_in_order(expected: list[str], actual: list[str]) -> int | None:
    """The index of the first expected event type not found after the previous one, or None."""
    position = 0
    for index, wanted in enumerate(expected):
        while position < len(actual) and actual[position] != wanted:
            position += 1
        if position == len(actual):
            return index
        position += 1
    return None


def check(case: Case, actual: Any) -> list[Failure]:
    """Every failed expectation of ``case`` on ``actual`` (a :class:`driver.Actual` or the same
    facts read from a Temporal run)."""
    out: list[Failure] = []
    for exp in case.expectations:
        failure = _check_one(case, exp, actual)
        if failure is not None:
            out.append(failure)
    return out


def _fail(case: Case, exp: Expectation, message: str, expected: Any = None, actual: Any = None,
          show_diff: bool = False) -> Failure:
    return Failure(case.file, exp.line, exp.col, exp.label, message, expected, actual, show_diff)


def _check_one(case: Case, exp: Expectation, actual: Any) -> Failure | None:
    what, key, want = exp.what, exp.key or "", exp.value
    if what == "status":
        if actual.status != want:
            reason = f" ({actual.reason})" if actual.reason else ""
            return _fail(case, exp, f"expected status {want}, the run ended {actual.status}{reason}")
    elif what == "steps":
        runs = actual.step_runs(key)
        if runs != want:
            return _fail(case, exp, f"expected step {key!r} to run {want} time(s), it ran {runs}; "
                                    f"route: {' -> '.join(actual.route) or '(none)'}")
    elif what == "route":
        if actual.route != want:
            return _fail(case, exp, "the route differs (steps in the order they started)", want, actual.route, True)
    elif what == "events":
        types = [e.get("event_type") for e in actual.events]
        missing = _events_in_order(want, types)
        if missing is not None:
            return _fail(case, exp, f"event {want[missing]!r} (item {missing + 1} of the list) does not follow "
                                    "the ones before it in the run's events", want, types, True)
    elif what == "attempts":
        made = actual.attempts.get(key)
        if made is None:  # a step's name: every task of it
            made = sum(n for k, n in actual.attempts.items() if k.split(".", 1)[0] == key)
        if made != want:
            return _fail(case, exp, f"expected {want} attempt(s) of {key!r}, the run made {made}")
    elif what == "error":
        if want not in actual.reason:
            return _fail(case, exp, f"the run's failure reason does not contain {want!r}: "
                                    f"{actual.reason or '(no failure reason)'}")
    elif what == "results":
        record = actual.steps.get(key)
        if record is None:
            return _fail(case, exp, f"step {key!r} never ran, so it has no result; "
                                    f"route: {' -> '.join(actual.route) or '(none)'}")
        got = record.get("result")
        ok = subset_of(want, got) if exp.mode == "subset" else _equal(want, got)
        if not ok:
            how = "is not a subset of" if exp.mode == "subset" else "differs from"
            return _fail(case, exp, f"the expected result {how} step {key!r}'s result", want, got, True)
    elif what == "ctx":
        got = _ctx_value(actual.ctx, key)
        ok = got is not _MISSING and (subset_of(want, got) if exp.mode == "subset" else _equal(want, got))
        if not ok:
            return _fail(case, exp, f"ctx {key!r} " + ("is not set" if got is _MISSING else "differs"),
                         want, got, True)
    return None
