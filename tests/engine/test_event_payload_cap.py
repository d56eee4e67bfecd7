"""Event payloads: kept as they are when plain and small, previewed when too large. A
payload of JSON values whose length is surely under the cap skips the encoding; whatever
path it takes, the answer is the one encoding gives."""

from __future__ import annotations

import json

import pytest

from noetl_temporal.engine.event_log import PAYLOAD_CAP_BYTES, _surely_small_and_plain, cap_payload


def _by_encoding(payload):
    """What cap_payload answered before the shortcut: always encode."""
    try:
        text, plain = json.dumps(payload, separators=(",", ":")), False
    except (TypeError, ValueError):
        text, plain = json.dumps(payload, default=str, separators=(",", ":")), True
    if len(text) > PAYLOAD_CAP_BYTES:
        return {"truncated": True, "bytes": len(text), "preview": text[:1024]}
    return json.loads(text) if plain else payload


CASES = [
    ({"step": "s1", "status": "ok", "attempt": 1, "ratio": 0.5, "done": True, "error": None}, True),
    ({"k": "x" * 1000}, True),
    ({"k": "x" * 2000}, True),
    ({"k": "x" * 3000}, False),                     # long: encoded, still under the cap
    ({"k": "x" * (PAYLOAD_CAP_BYTES + 10)}, False),  # too long: previewed
    ({f"k{i}": i for i in range(65)}, True),
    ({f"k{i}": i for i in range(1000)}, False),     # many keys: encoded, still under the cap
    ({"n": 10 ** 30}, False),                        # digits without bound
    ({"result": {"nested": [1, 2]}}, True),
    ({"outcome": {"status": "ok", "error": None, "meta": {}, "result": {"rows": [[1, "a"], (2.5, True)]}}}, True),
    ({"result": {"nested": [1, 10 ** 30]}}, False),
    ({"result": [{"k": "x" * 2000}] * 10}, False),  # too long: previewed
    ({"deep": [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}, False),  # past the walk's depth: encoded
    ({"result": {"when": object()}}, False),
    ({"when": object()}, False),                     # not JSON: encoded with str()
    ({1: "int key"}, False),
    ({"emoji": "\U0001F600" * 900}, True),
    ({"emoji": "\U0001F600" * 2000}, False),
]


@pytest.mark.parametrize("payload,shortcut", CASES)
def test_same_answer_as_encoding(payload, shortcut):
    assert _surely_small_and_plain(payload) is shortcut
    got = cap_payload(payload)
    assert got == _by_encoding(payload)
    if shortcut:
        assert got is payload


@pytest.mark.parametrize("value", [
    "\U0001F600", "\u00e9", "\x01", '"', "\\", -1.2345678901234567e-300, float("-inf"), -(1 << 64) + 1,
    True, None, {"\x01": "\x02"}, ["\x01", {"\U0001F600": []}],
])
def test_the_bound_is_never_below_the_encoding_of_the_worst_values(value):
    from noetl_temporal.engine import event_log

    for count in (1, 7, 100):
        payload = {"\U0001F600": [value] * count, "\x01": {"k": value}}
        bound = event_log._bound(payload, 1 << 30, 0)
        assert bound >= len(json.dumps(payload, separators=(",", ":")))


def test_a_cycle_is_encoded_and_refused_as_before():
    cyclic: dict = {"a": []}
    cyclic["a"].append(cyclic)
    assert not _surely_small_and_plain(cyclic)
    with pytest.raises(ValueError):
        cap_payload(cyclic)
