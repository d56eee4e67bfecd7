"""Event payloads: kept as they are when plain and small, previewed when too large. A flat
payload of small scalars skips the encoding; whatever path it takes, the answer is the one
encoding gives."""

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
    ({"k": "x" * 2000}, False),                     # long: encoded, still under the cap
    ({"k": "x" * (PAYLOAD_CAP_BYTES + 10)}, False),  # too long: previewed
    ({f"k{i}": i for i in range(65)}, False),       # many keys
    ({"n": 10 ** 30}, False),                        # digits without bound
    ({"result": {"nested": [1, 2]}}, False),
    ({"when": object()}, False),                     # not JSON: encoded with str()
    ({1: "int key"}, False),
    ({"emoji": "\U0001F600" * 900}, True),
]


@pytest.mark.parametrize("payload,shortcut", CASES)
def test_same_answer_as_encoding(payload, shortcut):
    assert _surely_small_and_plain(payload) is shortcut
    got = cap_payload(payload)
    assert got == _by_encoding(payload)
    if shortcut:
        assert got is payload


def test_the_shortcut_bound_holds_for_the_worst_flat_payload():
    from noetl_temporal.engine import event_log

    keys = [f"k{i:02d}" for i in range(event_log._FLAT_KEYS)]
    worst = {k: -1.2345678901234567e-300 for k in keys}
    worst[keys[0]] = "\U0001F600" * (event_log._FLAT_CHARS - sum(map(len, keys)))
    worst[keys[1]] = -(event_log._BIG_INT - 1)
    assert _surely_small_and_plain(worst)
    assert len(json.dumps(worst, separators=(",", ":"))) < PAYLOAD_CAP_BYTES
