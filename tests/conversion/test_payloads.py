"""The payload converter's shortcut decodes exactly what the SDK's own conversion would."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from temporalio.converter import DataConverter

from noetl_temporal.conversion.claimcheck import ClaimCheckCodec
from noetl_temporal.conversion.converter import data_converter
from noetl_temporal.conversion.local_only import LOCAL_ONLY_ENCODING, LocalOnlyList, local_run_task
from noetl_temporal.conversion.payload_converter import PayloadConverter, PlainJSONTypes
from noetl_temporal.engine.messages import Finish, RunTask, StepTimedOut

RUN_TASK = RunTask(task_run_id="t1", execution_id="e1", step="s", step_run_id="s#1", task="t", kind="python",
                   config={"code": "def main(): return 1", "input": {"n": [1, 2.5, None, {"x": True}]}},
                   rules=[{"when": "{{ ok }}"}], max_attempts=3, timeout=2.5, iteration=None)


@dataclasses.dataclass
class _Nested:  # not ours, and nested: the SDK's way
    inner: RunTask


@pytest.mark.parametrize(("hint", "value"), [
    (RunTask, RUN_TASK),
    (Finish, Finish(status="COMPLETED", result={"failed_steps": [{"step": "s"}], "reason": None})),
    (StepTimedOut, StepTimedOut(now="2026-01-01T00:00:00Z", step_run_id="s:run:1")),
    (dict[str, Any], {"a": [1, {"b": None}], "c": "x"}),
    (list[dict[str, Any]], [{"a": 1}, {}]),
    (Any, [1, "two", {"three": 3.0}]),
    (int, 3), (float, 2.5), (str, "s"), (bool, False), (int | None, None), (dict[str, Any] | None, None),
])
def test_decodes_like_the_sdk(hint, value):
    ours, sdk = PayloadConverter(), DataConverter.default.payload_converter
    payloads = sdk.to_payloads([value])
    assert ours.from_payloads(payloads, [hint]) == sdk.from_payloads(payloads, [hint]) == [value]


@pytest.mark.parametrize(("hint", "value", "expected"), [
    (float, 3, 3.0),      # an int where a float is declared: converted, as the SDK does
    (int, 3.0, 3),
])
def test_scalars_still_converted_by_the_sdk(hint, value, expected):
    payloads = DataConverter.default.payload_converter.to_payloads([value])
    [decoded] = PayloadConverter().from_payloads(payloads, [hint])
    assert decoded == expected and type(decoded) is type(expected)


def test_unknown_keys_are_ignored_and_defaults_apply():
    decoded = PlainJSONTypes().to_typed_value(RunTask, {**dataclasses.asdict(RUN_TASK), "added_later": 1,
                                                        "rules": [], "max_attempts": 1})
    assert isinstance(decoded, RunTask) and decoded.rules == [] and decoded.max_attempts == 1
    minimal = {k: v for k, v in dataclasses.asdict(RUN_TASK).items()
               if k in {"task_run_id", "execution_id", "step", "step_run_id", "task", "kind", "config"}}
    assert PlainJSONTypes().to_typed_value(RunTask, minimal).spec == {}


def test_other_types_go_the_sdk_way():
    types = PlainJSONTypes()
    assert types.to_typed_value(_Nested, {"inner": {}}) is PlainJSONTypes.Unhandled
    assert types.to_typed_value(RunTask, ["not", "a", "dict"]) is PlainJSONTypes.Unhandled
    assert types.to_typed_value(dict[str, Any], [1]) is PlainJSONTypes.Unhandled  # the SDK raises its error
    value = {"inner": dataclasses.asdict(RUN_TASK)}
    payloads = DataConverter.default.payload_converter.to_payloads([value])
    assert PayloadConverter().from_payloads(payloads, [_Nested]) == [_Nested(RUN_TASK)]


def test_the_project_converter_uses_it():
    assert data_converter().payload_converter_class is PayloadConverter


@dataclasses.dataclass
class _Outer:  # nested dataclasses, tuples and sets: what asdict and json make of them
    run: RunTask
    items: list[Any]
    pair: tuple[int, int] = (1, 2)


@pytest.mark.parametrize("value", [
    RUN_TASK,
    _Outer(RUN_TASK, [RUN_TASK, {"nested": _Nested(RUN_TASK)}, {3, 4}]),
    {"deep": [_Nested(RUN_TASK)]},
])
def test_encodes_exactly_as_the_sdk(value):
    ours = PayloadConverter().to_payloads([value])
    sdk = DataConverter.default.payload_converter.to_payloads([value])
    assert ours[0].data == sdk[0].data and ours[0].metadata == sdk[0].metadata


# --------------------------------------------------------------- local activity arguments

BIG_EVENTS = [{"seq": i, "event_type": "task.done", "payload": {"text": "x" * 400}} for i in range(500)]


@pytest.mark.parametrize(("value", "hint", "expected"), [
    (LocalOnlyList(BIG_EVENTS), list[dict[str, Any]], BIG_EVENTS),
    (local_run_task(RUN_TASK), RunTask, RUN_TASK),
])
def test_a_local_activity_argument_is_the_same_json_under_its_own_encoding(value, hint, expected):
    [payload] = PayloadConverter().to_payloads([value])
    assert payload.metadata["encoding"] == LOCAL_ONLY_ENCODING.encode()
    sdk = DataConverter.default.payload_converter.to_payloads([expected])[0]
    # The same JSON value; its keys in the value's own order (nothing outside this process
    # reads it, so it is not sorted as the SDK sorts what it writes for history).
    assert json.loads(payload.data) == json.loads(sdk.data)
    # A worker on the SDK's own converter (an embedding without ours) writes it as before.
    assert DataConverter.default.payload_converter.to_payloads([value])[0] == sdk
    [decoded] = PayloadConverter().from_payloads([payload], [hint])
    assert decoded == expected and type(decoded) is type(expected)


async def test_the_claim_check_leaves_local_activity_arguments_inline(tmp_path):
    codec = ClaimCheckCodec(str(tmp_path / "store"), threshold=1024)
    local, plain = PayloadConverter().to_payloads([LocalOnlyList(BIG_EVENTS), list(BIG_EVENTS)])
    encoded = await codec.encode([local, plain])
    assert encoded[0] == local  # left as it is: it never enters history
    assert encoded[1].metadata["encoding"] == b"noetl/claim-check"  # large, for history: stored
    assert [p.name for p in (tmp_path / "store").rglob("*") if p.is_file()] == [encoded[1].data.decode()]
    assert await codec.decode(encoded) == [local, plain]
