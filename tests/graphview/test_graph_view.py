"""``noetl-temporal graph``: the step graph as data and as Mermaid, table-tested.

Joins and back-edges must agree with the engine's StepGraph (the interpreter decides what
waits), so each case checks the picture against it as well as against fixed expectations.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from noetl_temporal.cli.main import main
from noetl_temporal.dsl import load_playbook, load_playbook_text
from noetl_temporal.engine.graph import StepGraph
from noetl_temporal.graphview import graph_view, to_mermaid
from noetl_temporal.graphview.mermaid import MAX_LABEL, escape
from tests.dsl.helpers import CORPUS, playbook

REPO = Path(__file__).resolve().parents[2]

INCLUSIVE_JOIN = playbook("""
    workflow:
      - step: a
        tool: {kind: noop}
        next:
          spec: {mode: inclusive}
          arcs: [{step: b, when: "{{ ctx.x > 1 }}"}, {step: c}]
      - step: b
        tool: {kind: noop}
        next: {arcs: [{step: d}]}
      - step: c
        loop: {in: "{{ [1, 2] }}", iterator: n, spec: {mode: parallel, max_in_flight: 2}}
        tool: {kind: noop}
        next: {arcs: [{step: d}]}
      - step: d
        tool: [{name: one, kind: noop}, {name: two, kind: python, code: "result = 1"}]
""")

EXCLUSIVE_ELSE = playbook("""
    workflow:
      - step: check
        tool: {kind: noop}
        next:
          arcs:
            - {step: big, when: "{{ check.n > 10 and 'x' == \\"x\\" }}"}
            - {step: small}
      - step: big
        tool: {kind: noop}
      - step: small
        tool: {kind: noop}
""")

CYCLE = playbook("""
    executor: {spec: {entry_step: fetch, final_step: wrap}}
    workflow:
      - step: wrap
        tool: {kind: noop}
      - step: fetch
        tool: {kind: http, url: "http://x/"}
        next: {arcs: [{step: check}]}
      - step: check
        tool: {kind: noop}
        spec:
          policy:
            admit: {rules: [{when: "{{ ctx.ok }}", allow: true}], on_deny: wait}
        next:
          arcs: [{step: fetch, when: "{{ ctx.more }}"}]
""")

# name, text, expected nodes {name: (kinds, loop?, join?, entry?, final?, router, admit?)},
# expected edges [(source, target, label, order, back)]
CASES = [
    ("inclusive join", INCLUSIVE_JOIN,
     {"a": (("noop",), False, False, True, False, "inclusive", False),
      "b": (("noop",), False, False, False, False, None, False),
      "c": (("noop",), True, False, False, False, None, False),
      "d": (("noop", "python"), False, True, False, False, None, False)},
     [("a", "b", "{{ ctx.x > 1 }}", None, False), ("a", "c", None, None, False),
      ("b", "d", None, None, False), ("c", "d", None, None, False)]),
    ("exclusive with else", EXCLUSIVE_ELSE,
     {"check": (("noop",), False, False, True, False, "exclusive", False),
      "big": (("noop",), False, False, False, False, None, False),
      "small": (("noop",), False, False, False, False, None, False)},
     [("check", "big", "{{ check.n > 10 and 'x' == \"x\" }}", 1, False), ("check", "small", "else", 2, False)]),
    ("cycle, entry, final, gate", CYCLE,
     {"wrap": (("noop",), False, False, False, True, None, False),
      "fetch": (("http",), False, False, True, False, None, False),
      "check": (("noop",), False, False, False, False, None, True)},
     [("fetch", "check", None, None, False), ("check", "fetch", "{{ ctx.more }}", None, True)]),
]


@pytest.mark.parametrize(("name", "text", "nodes", "edges"), CASES, ids=[c[0] for c in CASES])
def test_graph_view_table(name, text, nodes, edges):
    pb = load_playbook_text(text, "pb.yaml").playbook
    view = graph_view(pb)
    got = {n.name: (n.kinds, n.loop is not None, n.join, n.entry, n.final, n.router, n.admit is not None)
           for n in view.nodes}
    assert got == nodes
    assert [(e.source, e.target, e.label, e.order, e.back) for e in view.edges] == edges
    entry = next(n.name for n in view.nodes if n.entry)
    engine = StepGraph(playbook=pb, entry=entry)
    assert {n.name for n in view.nodes if n.join} == set(engine.joins)
    assert {(e.source, e.target) for e in view.edges if e.back} == set(engine.back_edges)


def test_mermaid_of_inclusive_join():
    text = to_mermaid(graph_view(load_playbook_text(INCLUSIVE_JOIN, "pb.yaml").playbook))
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    s0["a<br/>noop<br/>next: inclusive"]' in lines
    assert '    s2[["c<br/>noop<br/>loop n in {{ [1, 2] }} (parallel, max 2)"]]' in lines
    assert '    s3{{"d<br/>noop → python<br/>join: runs once, after its live branches"}}' in lines
    assert "    start --> s0" in lines
    assert '    s0 -->|"{{ ctx.x #gt; 1 }}"| s1' in lines
    assert "    s0 --> s2" in lines
    assert "    class s2 loopStep" in lines and "    class s3 joinStep" in lines
    assert "flow_end" not in text  # no final_step


def test_mermaid_numbers_exclusive_arcs_and_escapes_quotes():
    text = to_mermaid(graph_view(load_playbook_text(EXCLUSIVE_ELSE, "pb.yaml").playbook))
    assert "    s0 -->|\"1. {{ check.n #gt; 10 and 'x' == #quot;x#quot; }}\"| s1" in text
    assert '    s0 -->|"2. else"| s2' in text
    assert '"check<br/>noop<br/>next: exclusive"' in text


def test_mermaid_cycle_final_and_entry():
    text = to_mermaid(graph_view(load_playbook_text(CYCLE, "pb.yaml").playbook))
    lines = text.splitlines()
    assert "    start --> s1" in lines  # entry_step, not the first step
    assert '    s2 -.->|"{{ ctx.more }}"| s1' in lines  # back-edge dotted
    assert '    s0["wrap<br/>noop<br/>final step: runs once, last"]' in lines
    assert '    flow_end -.->|"then"| s0' in lines
    assert "admit rules (on_deny: wait)" in text
    assert "    class s0 finalStep" in lines


@pytest.mark.parametrize(("raw", "want"), [
    ('a "b"', "a #quot;b#quot;"),
    ("x < y > z", "x #lt; y #gt; z"),
    ("#1", "#35;1"),
    ("two\n  lines", "two lines"),
    ("x" * (MAX_LABEL + 5), "x" * (MAX_LABEL - 1) + "…"),
])
def test_escape(raw, want):
    assert escape(raw) == want


def test_odd_step_names_stay_labels():
    text = playbook("""
        workflow:
          - step: 'end'
            tool: {kind: noop}
            next: {arcs: [{step: 'a"b<c>'}]}
          - step: 'a"b<c>'
            tool: {kind: noop}
    """)
    out = to_mermaid(graph_view(load_playbook_text(text, "pb.yaml").playbook))
    assert '    s0["end<br/>noop"]' in out
    assert '    s1["a#quot;b#lt;c#gt;<br/>noop"]' in out
    assert "    s0 --> s1" in out


def test_cli_graph_prints_mermaid(capsys):
    assert main(["graph", str(REPO / "examples" / "hello.yaml")]) == 0
    out = capsys.readouterr().out
    assert out == to_mermaid(graph_view(load_playbook(REPO / "examples" / "hello.yaml").playbook))
    assert "report<br/>python<br/>join" in out


def test_cli_graph_invalid_playbook_is_located(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(playbook("workflow:\n  - step: a\n    tool: {kind: noop}\n    next: end\n"))
    assert main(["graph", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{bad}:8:11: NTL501" in captured.err
    assert "is not a valid playbook" in captured.err
    assert main(["graph", str(tmp_path / "missing.yaml")]) == 2
    assert "NTL001" in capsys.readouterr().err


def test_every_corpus_playbook_draws():
    """Real users' playbooks: every valid one gives a picture (no crash on odd shapes)."""
    files = sorted(CORPUS.rglob("*.yaml"))
    assert files, f"no playbooks at {CORPUS}"
    drawn = 0
    for path in files:
        try:
            loaded = load_playbook(path)
        except Exception:
            continue
        text = to_mermaid(graph_view(loaded.playbook))
        assert text.startswith("flowchart TD\n")
        drawn += 1
    assert drawn > 0
