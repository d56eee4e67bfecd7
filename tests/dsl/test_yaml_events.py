"""The event-built parse of a plain document (``yaml_loader._from_events``) against the
composing path it stands in for: equal data, positions and template list, and every
unusual document handed back to the composer (docs/performance.md, "Validation speed")."""

from __future__ import annotations

from pathlib import Path

import pytest

from noetl_temporal.dsl import validate_text
from noetl_temporal.dsl import yaml_loader as yl
from noetl_temporal.dsl.diagnostics import Reporter

REPO = Path(__file__).resolve().parents[2]

# plain documents the event pass builds itself
PLAIN = [
    "a: 1\nb: [x, 2.5, true, null, ~, '', yes, 'no', 0x1F, 2024-01-01, -3, .inf]\n",
    "a: &anchor {b: '{{ x }}', c: [[1, [2, {d: e}]], {}], f: []}\n'1': quoted key\n",
    "workflow:\n  - step: s\n    tool: {kind: shell, cmd: 'echo {{ ctx.a }}'}\n    next:\n"
    "      arcs: [{step: t, when: '{% if x %}1{% endif %}'}]\nset: {ctx.k: v, \"a b\": 1}\n",
    "nested:\n- - - deep\n  - '{{ a }}'\n- key: |\n    text {{ b }}\n    more\n",
    "true_ish: [y, n, on, off, True, FALSE]\nnumbers: [1_000, 1e3, -.5, +7, 0o17, 012]\n",
]
# documents the composing path must handle (aliases, tags, odd keys, errors ...)
UNUSUAL = [
    "a: &x 1\nb: *x\n", "a: !!str 1\n", "1: a\n", "null: a\n", "<<: {a: 1}\n", "a: 1\na: 2\n",
    "a: 1\n---\nb: 2\n", "hello\n", "", "[a, b]\n: c\n", "? [a]\n: b\n", "a: [1\n", "= : 1\n",
]


def _composed(text: str) -> yl.Parsed:
    """The composing path's result (the event pass turned away)."""
    parsed = None
    original = yl._from_events

    def refuse(*args, **kwargs):
        raise yl._Unusual

    yl._from_events = refuse
    try:
        parsed = yl.parse_yaml(text, Reporter())
    finally:
        yl._from_events = original
    assert parsed is not None
    return parsed


def _repo_playbooks() -> list[Path]:
    found = [p for folder in ("examples", "tests") for p in sorted((REPO / folder).rglob("*.yaml"))]
    assert len(found) > 50
    return found


def _same(text: str) -> None:
    fast, slow = yl._from_events(text), _composed(text)
    assert fast.data == slow.data
    assert list(fast.positions.items()) == list(slow.positions.items())
    assert list(fast.value_positions.items()) == list(slow.value_positions.items())
    assert fast.templates == slow.templates
    bare = yl._from_events(text, located=False)
    assert bare.data == fast.data and bare.templates == fast.templates and not bare.positions


@pytest.mark.parametrize("text", PLAIN)
def test_the_event_pass_builds_what_the_composer_builds(text):
    _same(text)


def test_every_playbook_of_the_repository_takes_the_event_pass_with_the_same_result():
    taken = 0
    for path in _repo_playbooks():
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            yl._from_events(text, located=False)
        except yl._Unusual:
            continue
        _same(text)
        taken += 1
    assert taken > 50   # the plain case is the rule, not the exception


@pytest.mark.parametrize("text", UNUSUAL)
def test_unusual_documents_go_to_the_composer(text):
    with pytest.raises(yl._Unusual):
        yl._from_events(text)


def test_positions_of_a_plain_document_are_read_from_a_second_parse():
    parsed = yl.parse_yaml(PLAIN[1], Reporter())
    assert isinstance(parsed.positions, yl._LazyPositions)
    assert parsed.positions["a.c[0][1][1].d"] == (1, 40)
    assert parsed.value_positions["a.c[0][1][1].d"] == (1, 43)
    assert dict(parsed.positions) == dict(_composed(PLAIN[1]).positions)


def test_a_mistake_deep_in_a_large_plain_playbook_keeps_its_line_and_column():
    """Over 64 KiB (the collector is paused, the positions come from the second parse)."""
    steps = "".join(f"  - step: s{i}\n    tool: {{kind: noop}}\n    next: {{arcs: [{{step: s{i + 1}}}]}}\n"
                    for i in range(2000))
    text = (f"apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {{name: big}}\nworkflow:\n{steps}"
            f"  - step: s2000\n    tool: {{kind: noop, colour: red}}\n")
    assert len(text) > 64 * 1024
    found = [(d.code, d.line, d.col) for d in validate_text(text, "big.yaml") if d.is_error]
    assert found == [("NTL310", 6006, 24)]
