"""``noetl-temporal test --record``: a case written from a real run (docs/testing-playbooks.md,
"Recording a case").

The playbook runs once with every tool for real, in this process (the default mode's
driver with ``real:`` every kind it can run; a sub-playbook runs too and is recorded as one
task). What each task answered becomes its mock, attempt by attempt, and what the run
showed becomes the case's expectations: status, route, attempts, ctx, each step's result,
the failure reason. The case is written as a new test file for the playbook; review it
and trim the expectations that are not the point of the test.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ..engine.envelopes import Outcome
from ..tool_kinds import REGISTRY_KINDS
from .driver import Actual, load, record_case
from .spec import Case

__all__ = ["record", "RECORDED_KINDS"]

#: what runs for real while recording: every registered tool, and sub-playbooks
RECORDED_KINDS = frozenset({*REGISTRY_KINDS, "playbook"})


class _Dumper(yaml.SafeDumper):
    """Every value written out where it is (no ``&id001`` anchors: a test file is for reading)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _answer(outcome: Outcome) -> dict[str, Any]:
    if outcome.status == "ok":
        return {"result": outcome.result}
    error = outcome.error
    data: dict[str, Any] = {"type": error.kind if error else "error", "message": error.message if error else ""}
    if error is not None and error.retryable:
        data["retryable"] = True
    if error is not None and error.code is not None:
        data["code"] = error.code
    if error is not None and error.retry_after is not None:
        data["retry_after"] = error.retry_after
    return {"error": data}


def _mock(invocations: list[list[Outcome]]) -> tuple[Any, bool]:
    """The mock of one task (its first invocation's answers) and whether every other
    invocation answered the same (a test file answers per attempt, not per invocation)."""
    first = [_answer(o) for o in invocations[0]]
    same = all([_answer(o) for o in other] == first for other in invocations[1:])
    return (first[0] if len(first) == 1 else first), same


def record(playbook_file: str, payload: dict[str, Any], out: str, name: str) -> tuple[Actual, list[str]]:
    """Run ``playbook_file`` for real with ``payload`` and write the case to ``out`` (a new
    file). Returns the run and warnings (tasks whose recorded mock cannot replay every run)."""
    playbook, source = load(playbook_file)
    case = Case(name=name, file=out, line=None, payload=payload, real=RECORDED_KINDS)
    actual, recorded = record_case(case, playbook, source)
    if actual.problem:
        raise ValueError(f"the run could not finish: {actual.problem}")
    mocks: dict[str, Any] = {}
    warnings = []
    for key, invocations in recorded.items():
        mocks[key], same = _mock(invocations)
        if not same:
            warnings.append(f"task {key!r} ran {len(invocations)} times with different answers; its mock answers "
                            "as its first run did, so the recorded expectations may not hold: edit the case")
    expect: dict[str, Any] = {"status": actual.status, "route": actual.route}
    if actual.attempts:
        expect["attempts"] = dict(actual.attempts)
    if actual.ctx:
        expect["ctx"] = dict(actual.ctx)
    results = {step: record.get("result") for step, record in actual.steps.items() if "result" in record}
    if results:
        expect["results"] = results
    if actual.status != "COMPLETED" and actual.reason:
        expect["error"] = actual.reason
    relative = os.path.relpath(Path(playbook_file).resolve(), Path(out).resolve().parent)
    data = {"playbook": relative, "cases": [{"name": name, "payload": payload, "mocks": mocks, "expect": expect}]}
    header = (f"# Recorded by `noetl-temporal test --record` from a real run of {relative}: the tools' answers\n"
              "# are the mocks, what the run showed the expectations. Trim what is not the point of the test.\n")
    Path(out).write_text(header + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100),
                         encoding="utf-8")
    return actual, warnings
