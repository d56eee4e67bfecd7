"""The 413 check with a part measured ahead (``check_expanded(measured=...)``): the start
route hands over the playbook's size counted once per cached playbook, and must refuse and
accept exactly what measuring the raw playbook per request did, with the same message.
Pure: the real loader and the real check, every limit around the sizes that matter."""

from __future__ import annotations

from noetl_temporal.api.limits import EXPANSION, TooLarge, check_expanded, expanded_size
from noetl_temporal.dsl import load_playbook_text

from .conftest import playbook

ALIASED = playbook("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: sized}
    workload:
      row: &row {a: xxxxxxxxxx, b: [1, 2, 3]}
      rows: [*row, *row, *row, *row, *row, *row]
    workflow:
      - step: a
        tool: {kind: noop}
    """)


def _outcome(max_body: int, **parts) -> str | None:
    """None if ``check_expanded`` accepts, else its message."""
    try:
        check_expanded(max_body, **parts)
    except TooLarge as refused:
        return str(refused)
    return None


def test_a_measured_playbook_is_refused_and_accepted_exactly_as_the_raw_one():
    raw = load_playbook_text(ALIASED, "<request>").raw
    exact = expanded_size(raw, 10**9)
    payloads = [{}, {"k": "v" * 40}, {"rows": [{"x": "y" * 30}] * 5}]
    sizes = sorted({exact, *(exact + expanded_size(p, 10**9) for p in payloads)})
    # every body limit whose expansion limit lies around the playbook alone and the total
    bodies = sorted({max(1, s // EXPANSION + d) for s in sizes for d in range(-3, 4)})
    crossed = set()
    for max_body in bodies:
        limit = EXPANSION * max_body
        for payload in payloads:
            direct = _outcome(max_body, playbook=raw, payload=payload)
            for cap in (limit, limit + 1, 4 * limit):  # the cache counts up to at least the limit
                ahead = expanded_size(raw, cap)
                measured = _outcome(max_body, measured={"playbook": ahead}, payload=payload)
                assert measured == direct, (max_body, payload, cap)
            crossed.add(None if direct is None else direct.split("; the ")[1].split(" crossed")[0])
    # the limits above reach all three outcomes: it fits, the playbook crosses, the payload crosses
    assert crossed == {None, "playbook", "payload"}


def test_the_message_names_the_parts_and_the_limit():
    raw = load_playbook_text(ALIASED, "<request>").raw
    try:
        check_expanded(10, measured={"playbook": expanded_size(raw, 20)}, payload={})
    except TooLarge as refused:
        assert str(refused).startswith("the request's playbook and payload expand to more than 20 bytes once parsed")
    else:
        raise AssertionError("a playbook over the limit was accepted")


def test_expanded_size_is_exact_up_to_its_limit_and_over_it_past():
    raw = load_playbook_text(ALIASED, "<request>").raw
    exact = expanded_size(raw, 10**9)
    assert expanded_size(raw, exact) == exact
    assert expanded_size(raw, exact - 1) > exact - 1
    assert expanded_size(raw, 10) > 10
