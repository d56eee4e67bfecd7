"""Tokens versus joins (docs/semantics.md "Tokens versus joins", issue 10): one token per step run; a step
is a join only for upstreams that can run concurrently (docs/semantics.md)."""

from __future__ import annotations

import pytest

from .harness import err, feed, finished, ok, playbook, run

ISSUE_EXAMPLE = """
workflow:
  - step: s1
    tool: {kind: python, code: x}
    next: {spec: {mode: inclusive}, arcs: [{step: notify, args: {stage: 1}}, {step: s2}]}
  - step: s2
    tool: {kind: python, code: x}
    next: {spec: {mode: inclusive}, arcs: [{step: notify, args: {stage: 2}}, {step: s3}]}
  - step: s3
    tool: {kind: python, code: x}
  - step: notify
    tool: {kind: python, code: x, args: {stage: "{{ args.stage }}"}}
"""

DIAMOND = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: %s}, arcs: [{step: a, args: {side: L, k: 1}}, {step: b, args: {side: R, k: 2}}]}
  - step: a
    tool: {kind: python, code: x}
    next: {arcs: [{step: j, args: {x: "{{ args.side }}"}}]}
  - step: b
    tool: {kind: python, code: x}
    next: {arcs: [{step: j, args: {x: "{{ args.side }}", y: 1}}]}
  - step: j
    tool: {kind: python, code: x, args: {x: "{{ args.x }}"}}
"""

FANOUT3 = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: a}, {step: b}, {step: c}]}
  - step: a
    tool: {kind: python, code: x}
    next: {arcs: [{step: j, args: {from_a: 1}}]}
  - step: b
    tool: [{name: one, kind: python, code: x}, {name: two, kind: python, code: x}]
    next: {arcs: [{step: j, args: {from_b: 2}}]}
  - step: c
    tool: {kind: python, code: x}
    next: {arcs: [{step: j}]}
  - step: j
    tool: {kind: noop}
"""

LOOP_BACK = """
workflow:
  - step: start
    tool: {kind: noop}
    set: {ctx.n: 0}
    next: {spec: {mode: inclusive}, arcs: [{step: a}, {step: b}]}
  - step: a
    tool: {kind: python, code: x}
    next: {arcs: [{step: j}]}
  - step: b
    tool: {kind: python, code: x}
    next: {arcs: [{step: j}]}
  - step: j
    tool: {kind: noop}
    set: {ctx.n: "{{ ctx.n + 1 }}"}
    next: {arcs: [{step: again, when: "{{ ctx.n < 3 }}"}]}
  - step: again
    tool: {kind: python, code: x}
    next: {arcs: [{step: j}]}
"""

FAILING_BRANCH = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: a, args: {who: a}}, {step: b, args: {who: b}}]}
  - step: a
    tool: {kind: python, code: x}
    next: {arcs: [%s]}
  - step: b
    tool: {kind: python, code: x}
    next: {arcs: [{step: j, args: {b: 1}}]}
  - step: j
    tool: {kind: noop}
"""

MIXED = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: j, args: {early: true}}, {step: a}, {step: b}]}
  - step: a
    tool: {kind: python, code: x}
    next: {arcs: [{step: j}]}
  - step: b
    tool: {kind: python, code: x}
    next: {arcs: [{step: j}]}
  - step: j
    tool: {kind: noop}
"""


def _scheduled(r, step):
    return [e for e in r.events if e["event_type"] == "step.scheduled" and e["entity_id"] == step]


@pytest.mark.parametrize("text, joins", [
    (ISSUE_EXAMPLE, {}),                                         # sequential convergence
    (DIAMOND % "inclusive", {"j": {"a", "b"}}),                   # diamond after an inclusive fan-out
    (DIAMOND % "exclusive", {}),                                  # exclusive diamond: one branch only
    (FANOUT3, {"j": {"a", "b", "c"}}),                            # inclusive fan-out / fan-in
    (LOOP_BACK, {"j": {"a", "b"}}),                               # the back-edge again -> j is no join arc
    (MIXED, {"j": {"a", "b"}}),                                   # start -> j directly is sequential
])
def test_join_structure(text, joins):
    graph = _graph(text)
    assert {k: set(v) for k, v in graph.join_upstreams.items()} == joins


def _graph(text):
    from noetl_temporal.engine.machine import new_state
    return new_state(playbook(text), "ex").graph


def test_sequential_convergence_runs_the_step_once_per_token_as_soon_as_it_arrives():
    r = run(ISSUE_EXAMPLE, hold=lambda c: c.step == "s2")
    # s2 is still running: notify has already run for stage 1
    assert r.steps_started().count("notify") == 1
    assert [c.config["args"]["stage"] for c in r.ran if c.step == "notify"] == [1]
    feed(r, finished(r.held[0], ok()))
    assert r.steps_started().count("notify") == 2
    assert [c.config["args"]["stage"] for c in r.ran if c.step == "notify"] == [1, 2]
    assert r.state.steps["notify"].runs == 2
    assert r.status == "COMPLETED"


def test_inclusive_diamond_runs_once_keeps_every_arcs_args_and_reports_the_conflict():
    r = run(DIAMOND % "inclusive")
    assert r.steps_started().count("j") == 1
    (event,) = _scheduled(r, "j")
    args = event["payload"]["inputs"]["args"]
    assert args["_upstreams"] == {"a": {"x": "L"}, "b": {"x": "R", "y": 1}}
    assert args["y"] == 1
    join = event["payload"]["meta"]["join"]
    assert sorted(join["from"]) == ["a", "b"]
    assert join["conflicts"] == {"x": {"a": "L", "b": "R"}}
    assert r.status == "COMPLETED"


def test_exclusive_diamond_is_not_a_join_and_passes_args_as_they_are():
    r = run(DIAMOND % "exclusive")
    (event,) = _scheduled(r, "j")
    assert event["payload"]["inputs"]["args"] == {"x": "L"}
    assert "join" not in event["payload"]["meta"]
    assert [c.config["args"]["x"] for c in r.ran if c.step == "j"] == ["L"]


def test_fan_in_waits_for_every_branch_that_can_still_arrive():
    r = run(FANOUT3, hold=lambda c: c.step == "b" and c.task == "two")
    assert "j" not in r.steps_started()
    feed(r, finished(r.held[0], ok()))
    assert r.steps_started().count("j") == 1
    args = _scheduled(r, "j")[0]["payload"]["inputs"]["args"]
    assert args["from_a"] == 1 and args["from_b"] == 2
    assert args["_upstreams"]["c"] == {}
    assert _scheduled(r, "j")[0]["payload"]["meta"]["join"]["conflicts"] is None


def test_loop_back_into_a_join_runs_the_join_again_per_token():
    r = run(LOOP_BACK)
    assert r.steps_started().count("j") == 3     # one joined run, then two loop-backs
    assert r.state.ctx["n"] == 3
    assert r.status == "COMPLETED"


def test_a_token_from_an_ancestor_upstream_does_not_wait_for_the_join():
    r = run(MIXED, hold=lambda c: c.step in ("a", "b"))
    assert r.steps_started().count("j") == 1     # the direct token ran at once
    assert _scheduled(r, "j")[0]["payload"]["inputs"]["args"] == {"early": True}
    for cmd in list(r.held):
        feed(r, finished(cmd, ok()))
    assert r.steps_started().count("j") == 2     # a and b joined into one more run
    assert r.status == "COMPLETED"


def test_unhandled_failed_branch_no_longer_holds_the_join():
    arcs = "{step: j, args: {a: 1}, when: \"{{ event.name == 'step.done' }}\"}"
    r = run(FAILING_BRANCH % arcs, tool=lambda c: err() if c.step == "a" else ok())
    assert r.steps_started().count("j") == 1
    args = _scheduled(r, "j")[0]["payload"]["inputs"]["args"]
    assert args["_upstreams"] == {"b": {"b": 1}}
    assert r.state.steps["a"].status == "FAILED"
    assert r.status == "FAILED"


def test_handled_failed_branch_joins_through_its_failure_arc():
    arcs = "{step: j, args: {a_failed: true}, when: \"{{ event.name == 'step.failed' }}\"}"
    r = run(FAILING_BRANCH % arcs, tool=lambda c: err() if c.step == "a" else ok())
    assert r.steps_started().count("j") == 1
    args = _scheduled(r, "j")[0]["payload"]["inputs"]["args"]
    assert args["a_failed"] is True and args["b"] == 1
    assert r.state.steps["a"].status == "HANDLED"
    assert r.status == "COMPLETED"


def test_a_long_chain_has_no_join_analysis_cost():
    steps = "\n".join(f"  - step: s{i}\n    tool: {{kind: noop}}\n    next: {{arcs: [{{step: s{i + 1}}}]}}"
                      for i in range(3000))
    graph = _graph("workflow:\n" + steps + "\n  - step: s3000\n    tool: {kind: noop}\n")
    assert graph.joins == frozenset()


def _side(name: str, mode: str) -> str:
    """``name`` routes (``mode``) to ``<name>1`` and ``<name>2``, which meet at ``<name>j``."""
    return f"""
  - step: {name}
    tool: {{kind: noop}}
    next: {{spec: {{mode: {mode}}}, arcs: [{{step: {name}1}}, {{step: {name}2}}]}}""" + "".join(f"""
  - step: {name}{i}
    tool: {{kind: noop}}
    next: {{arcs: [{{step: {name}j}}]}}""" for i in (1, 2)) + f"""
  - step: {name}j
    tool: {{kind: noop}}
    next: {{arcs: [{{step: end}}]}}"""


# An inclusive router under an inclusive one (l: a join at lj), an exclusive one (r: no join
# at rj), and all three branches of the outer router meeting at `end`.
NESTED = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: l}, {step: r}, {step: solo}]}""" + _side("l", "inclusive") + \
    _side("r", "exclusive") + """
  - step: solo
    tool: {kind: noop}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: noop}
"""


def _pairwise_joins(graph):
    """The definition, pair by pair: an upstream is concurrent if some other one is."""
    out = {}
    for name, ups in graph.forward_upstreams.items():
        ancestors = {u: graph._forward_ancestors(u) for u in ups}
        concurrent = {u for u in ups for v in ups
                      if u != v and graph._concurrent(ancestors[u], ancestors[v], u, v)}
        if len(ups) > 1 and concurrent:
            out[name] = concurrent
    return out


def _corpus_graphs():
    from noetl_temporal.dsl import load_playbook
    from noetl_temporal.errors import PlaybookInvalid

    from ..dsl.helpers import CORPUS

    for path in sorted(CORPUS.glob("*.yaml")):
        try:
            yield path.name, load_playbook(path).playbook
        except PlaybookInvalid:  # the corpus keeps a few invalid ones on purpose
            continue


def test_joins_are_what_the_pairwise_definition_says():
    """The join analysis stops at the first concurrent partner and skips upstreams under no
    common inclusive router (it compared every pair: seconds for a 2,000-way join); it must
    find exactly the joins the pairwise definition finds."""
    from noetl_temporal.engine.machine import new_state

    cases = [(f"example {i}", playbook(text)) for i, text in enumerate(
        [ISSUE_EXAMPLE, DIAMOND % "inclusive", DIAMOND % "exclusive", FANOUT3, LOOP_BACK, MIXED, NESTED])]
    cases += list(_corpus_graphs())
    assert len(cases) > 20
    for name, pb in cases:
        graph = new_state(pb, "ex").graph
        assert {k: set(v) for k, v in graph.join_upstreams.items()} == _pairwise_joins(graph), name
    nested = new_state(playbook(NESTED), "ex").graph
    assert {k: set(v) for k, v in nested.join_upstreams.items()} == {"lj": {"l1", "l2"}, "end": {"lj", "rj", "solo"}}
