"""NTL508: steps that route to each other with arcs that always fire never end (issue 24)."""

from __future__ import annotations

import pytest

from .helpers import codes, diags, find, playbook

CYCLE = playbook("""
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: a}]}
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: end, when: "{{ ctx.n > 3 }}"}, {step: a}]}
  - step: end
    tool: {kind: noop}
""")


def test_an_unconditional_cycle_is_a_located_warning():
    found = [d for d in diags(CYCLE) if d.code == "NTL508"]
    assert len(found) == 1 and not found[0].is_error
    assert "a -> b -> a" in found[0].message and "never ends" in found[0].message
    assert found[0].line == find(CYCLE, "{step: a}]}", 1)[0]   # the arc of b that closes it


@pytest.mark.parametrize("change", [
    ("{step: a}]}\n  - step: end", "{step: a, when: \"{{ ctx.n < 3 }}\"}]}\n  - step: end"),   # guarded
    ("{spec: {mode: inclusive}, ", "{"),   # exclusive: the guarded first arc may win
    ("next: {arcs: [{step: b}]}", "next: {arcs: [{step: b, when: \"{{ true }}\"}]}"),
])
def test_a_cycle_with_a_way_out_is_fine(change):
    text = CYCLE.replace(*change)
    assert text != CYCLE
    assert "NTL508" not in codes(diags(text))


def test_a_step_routing_to_itself_is_a_cycle():
    text = playbook("""
    workflow:
      - step: start
        tool: {kind: noop}
        next: {arcs: [{step: start}]}
    """)
    assert codes(diags(text)) == ["NTL508"]
