"""The typed envelopes give back exactly the JSON they were read from (recorded histories
and stored events hold that JSON), and the builders write the shapes they always wrote."""

from __future__ import annotations

import dataclasses
import json

import pytest

from noetl_temporal.engine.common import ended_outcome, engine_error, error_outcome
from noetl_temporal.engine.envelopes import ErrorInfo, Outcome, RunOutput, TaskResult
from noetl_temporal.engine.status_layers import ExecutionStatus

REF = {"kind": "result_ref", "ref": "noetl://fs/ex-1/ex-1:step:big:1:task:t:1-1.json", "store": "fs",
       "meta": {"bytes": 120034, "sha256": "ab12", "content_type": "application/json"},
       "extracted": {"count": 3}, "preview": "[{\"id\": 1}, ..."}
META = {"attempt": 1, "duration_ms": 12, "started_at": "2026-01-02T03:04:05.678Z"}

# Real shapes, as tools, the activity, the workflow and the engine write them today.
OUTCOMES = {
    "tool ok with helper": {"status": "ok", "result": {"rows": [1, 2]}, "error": None, "meta": META,
                            "http": {"status": 200, "headers": {"content-type": "application/json"}}},
    "tool error with fix, retry_after, details": {
        "status": "error", "result": {"body": "slow down"},
        "error": {"kind": "http", "retryable": True, "code": 429, "message": "HTTP 429", "fix": "wait",
                  "retry_after": 2.5, "details": {"url": "https://x"}},
        "meta": META, "http": {"status": 429}},
    "tool crashed": {"status": "error", "result": None,
                     "error": {"kind": "internal", "retryable": False, "code": "KeyError",
                               "message": "KeyError: 'x'", "details": {"traceback": "Traceback ..."}},
                     "meta": META},
    "engine template failure": {"status": "error", "result": None,
                                "error": {"kind": "template", "retryable": False, "code": None,
                                          "message": "undefined 'x'"},
                                "meta": {"attempt": 1, "duration_ms": 0}},
    "cancelled (workflow, meta before error)": {
        "status": "error", "result": None, "meta": {},
        "error": {"kind": "cancelled", "retryable": False, "code": None, "message": "task cancelled"}},
    "timed out": {"status": "error", "result": None, "meta": {},
                  "error": {"kind": "timeout", "retryable": False, "code": None,
                            "message": "activity StartToClose timeout"}},
    "tool timeout": {"status": "error", "result": None,
                     "error": {"kind": "timeout", "retryable": True, "code": None,
                               "message": "shell task ran past its 1 s timeout"},
                     "meta": META, "shell": {"returncode": None}},
    "retries exhausted (no code key)": {
        "status": "error", "result": None, "meta": {"attempt": None},
        "error": {"kind": "retries_exhausted", "retryable": False, "message": "policy retry 3/5"}},
    "stored result ref": {"status": "ok", "result": REF, "error": None, "meta": META, "result_ref": REF},
    "step outcome without a task": {"meta": {}, "status": "ok", "result": 3, "error": None},
    "sub-playbook ok": {"status": "ok", "result": {"a": 1}, "error": None,
                        "meta": {"child_execution_id": "child-1a2b", "child_state": "COMPLETED",
                                 "child_version": 2}},
    "empty error": {"status": "error", "result": None, "error": {}, "meta": {}},
    "no status": {"result": 1},
}

ATTEMPTS = [
    {"attempt": 1, "status": "error", "started_at": "2026-01-02T03:04:05Z", "duration_ms": 3,
     "error": OUTCOMES["timed out"]["error"], "action": "retry", "rule_index": 0, "next_delay_s": 1.0},
    {"attempt": 2, "status": "ok", "started_at": "2026-01-02T03:04:07Z", "duration_ms": 2, "error": None,
     "action": "continue", "rule_index": None},
]

TASK_RESULTS = {
    "activity result": {"outcome": OUTCOMES["tool ok with helper"], "attempts": ATTEMPTS, "rule_index": None,
                        "action": "continue", "exhausted": False},
    "retry exhausted": {"outcome": OUTCOMES["tool timeout"], "attempts": ATTEMPTS[:1], "rule_index": 0,
                        "action": "fail", "exhausted": True},
    "undecided": {"outcome": OUTCOMES["cancelled (workflow, meta before error)"], "attempts": [],
                  "rule_index": None, "action": None, "exhausted": False, "decided": False},
}

RUN_OUTPUT = {"execution_id": "ex-1", "state": "COMPLETED",
              "result": {"status": "COMPLETED", "final_step": "end", "total_steps": 2},
              "ctx": {"n": 1}, "steps": {"start": {"status": "COMPLETED", "runs": 1, "result": 1}},
              "started_at": "2026-01-02T03:04:05Z", "ended_at": "2026-01-02T03:04:06Z",
              "terminal_event": "playbook.processed", "event_count": 17}
RUN_OUTPUTS = {
    "completed": RUN_OUTPUT,
    "failed": {**RUN_OUTPUT, "state": "FAILED", "result": {"status": "FAILED", "reason": "step 'x' failed"}},
    "cancelled": {**RUN_OUTPUT, "state": "CANCELLED", "result": {"status": "CANCELLED", "reason": "stop"},
                  "terminal_event": "execution.cancelled"},
    "running (detail query)": {**RUN_OUTPUT, "state": "RUNNING", "result": None, "ended_at": None,
                               "terminal_event": None, "paused": True},
}

CASES = ([(Outcome, d) for d in OUTCOMES.values()] + [(TaskResult, d) for d in TASK_RESULTS.values()]
         + [(RunOutput, d) for d in RUN_OUTPUTS.values()])
IDS = [*OUTCOMES, *TASK_RESULTS, *RUN_OUTPUTS]


@pytest.mark.parametrize("envelope,data", CASES, ids=IDS)
def test_round_trip_is_the_same_json(envelope, data):
    wire = json.loads(json.dumps(data))
    back = envelope.from_dict(wire).to_dict()
    assert json.dumps(back) == json.dumps(data)   # same keys, same order, same values


@pytest.mark.parametrize("data", [o["error"] for o in OUTCOMES.values() if o.get("error")])
def test_error_round_trip(data):
    assert json.dumps(ErrorInfo.from_dict(data).to_dict()) == json.dumps(data)


def test_fields_are_typed():
    outcome = Outcome.from_dict(OUTCOMES["tool error with fix, retry_after, details"])
    assert outcome.status == "error" and not outcome.is_ok and outcome.attempt == 1
    assert outcome.error == ErrorInfo(kind="http", message="HTTP 429", retryable=True, code=429, fix="wait",
                                      retry_after=2.5, details={"url": "https://x"})
    assert outcome.extra == {"http": {"status": 429}}
    assert Outcome.from_dict(OUTCOMES["stored result ref"]).result_ref == REF
    result = TaskResult.from_dict(TASK_RESULTS["retry exhausted"])
    assert (result.rule_index, result.action, result.exhausted, result.decided) == (0, "fail", True, True)
    assert result.outcome.error_kind == "timeout"
    assert not TaskResult.from_dict(TASK_RESULTS["undecided"]).decided
    run = RunOutput.from_dict(RUN_OUTPUTS["failed"])
    assert run.state is ExecutionStatus.FAILED and run.reason == "step 'x' failed"
    assert RunOutput.from_dict(RUN_OUTPUTS["running (detail query)"]).paused is True


def test_unknown_outcome_status_is_refused():
    with pytest.raises(ValueError, match="'ok' or 'error'"):
        Outcome.from_dict({"status": "maybe", "result": None, "error": None, "meta": {}})


def test_built_in_code_they_write_the_shapes_they_always_did():
    assert json.dumps(error_outcome("template", "boom").to_dict()) == json.dumps(
        {"status": "error", "result": None,
         "error": {"kind": "template", "retryable": False, "code": None, "message": "boom"},
         "meta": {"attempt": 1, "duration_ms": 0}})
    assert engine_error("loop", "2 of 3 failed").to_dict() == {"kind": "loop", "retryable": False, "code": None,
                                                       "message": "2 of 3 failed"}
    assert Outcome(status="ok", result=[1], error=None).to_dict() == {
        "status": "ok", "result": [1], "error": None, "meta": {}}
    # The activity returns exactly these keys: no `decided` on the wire.
    assert list(TaskResult(outcome=Outcome.ok(1)).to_dict()) == [
        "outcome", "attempts", "rule_index", "action", "exhausted"]
    assert list(RunOutput(execution_id="e", state=ExecutionStatus.RUNNING).to_dict()) == [
        "execution_id", "state", "result", "ctx", "steps", "started_at", "ended_at", "terminal_event",
        "event_count"]


def test_an_ended_pipeline_outcome_is_its_last_task_outcome_updated_like_the_dict_was():
    last = OUTCOMES["stored result ref"]
    failed = {**last, "status": "error", "error": engine_error("policy", "no").to_dict()}
    ended = ended_outcome(Outcome.from_dict(last), ok=False, result=REF, error=engine_error("policy", "no"))
    assert json.dumps(ended.to_dict()) == json.dumps(failed)
    # no task ran: `dict({"meta": {}})` then status/result/error, in that order
    assert json.dumps(ended_outcome(None, ok=True, result=2, error=None).to_dict()) == json.dumps(
        {"meta": {}, "status": "ok", "result": 2, "error": None})


def test_updated_adds_missing_keys_after_the_others():
    outcome = Outcome.from_dict({"status": "ok", "result": 1})
    assert list(outcome.updated(meta={"attempt": 2}).to_dict()) == ["status", "result", "meta"]
    assert outcome.updated(meta={"attempt": 2}).attempt == 2
    replaced = dataclasses.replace(Outcome.from_dict(OUTCOMES["tool crashed"]), keys=None)
    assert replaced.to_dict() == OUTCOMES["tool crashed"]
