"""The engine's own state machines (pipelines, tokens, loops): every pair of each table,
the paths a run takes, what must stay impossible, the vocabulary the pipeline shares with
the DSL, and runs (and snapshots) that carry these states."""

from __future__ import annotations

import itertools
import json
from typing import get_args

import pytest

from noetl_temporal.dsl.models import TaskAction
from noetl_temporal.engine.snapshot import restore, snapshot
from noetl_temporal.engine.state_machines import (
    ENGINE_TABLES,
    ENGINE_TERMINAL,
    LoopState,
    PipelineAction,
    PipelineState,
    TokenState,
    move,
)
from noetl_temporal.engine.status_docs import mermaid, render_docs
from noetl_temporal.errors import InvalidTransition

from .harness import feed, finished, ok, playbook, run

P, T, L = PipelineState, TokenState, LoopState
ENUMS = {"pipeline": PipelineState, "token": TokenState, "loop": LoopState}


@pytest.mark.parametrize("layer", sorted(ENGINE_TABLES))
def test_every_pair_is_allowed_exactly_when_in_the_table(layer):
    enum = ENUMS[layer]
    for src, dst in itertools.product(enum, enum):
        if (src, dst) in ENGINE_TABLES[layer]:
            assert move(layer, src, dst) is dst
        else:
            with pytest.raises(InvalidTransition):
                move(layer, src, dst)


@pytest.mark.parametrize("layer", sorted(ENGINE_TABLES))
def test_terminal_states_have_no_way_out(layer):
    for (src, _dst) in ENGINE_TABLES[layer]:
        assert src not in ENGINE_TERMINAL[layer]


@pytest.mark.parametrize("layer", sorted(ENGINE_TABLES))
def test_docs_draw_every_move(layer):
    diagram = mermaid(layer)
    for (src, dst) in ENGINE_TABLES[layer]:
        assert f"{src.value} --> {dst.value}" in diagram
        assert f"| {src.value} | {dst.value} |" in render_docs()


@pytest.mark.parametrize("layer, path", [
    ("pipeline", [P.RUNNING, P.COMPLETED]),                                   # noop tasks, then the end
    ("pipeline", [P.RUNNING, P.WAITING, P.RUNNING, P.WAITING, P.RUNNING, P.FAILED]),   # two activities
    ("pipeline", [P.RUNNING, P.PARKED, P.RUNNING, P.COMPLETED]),              # budget, then Proceed
    ("pipeline", [P.RUNNING, P.WAITING, P.RUNNING, P.CANCELLED]),             # fail_fast cancelled it
    ("token", [T.READY, T.ADMITTED]),
    ("token", [T.READY, T.DENIED, T.ADMITTED]),                               # an approval gate
    ("token", [T.READY, T.BUFFERED, T.JOINED]),
    ("token", [T.READY, T.BUFFERED, T.DROPPED]),
    ("token", [T.READY, T.ABSORBED]),
    ("loop", [L.FILLING, L.WAITING, L.FILLING, L.WAITING, L.FILLING, L.COMPLETED]),
    ("loop", [L.FILLING, L.PARKED, L.FILLING, L.PARKED, L.FILLING, L.FAILED]),
])
def test_paths_a_run_takes_are_allowed(layer, path):
    state = path[0]
    for target in path[1:]:
        state = move(layer, state, target)
    assert state in ENGINE_TERMINAL[layer]


@pytest.mark.parametrize("layer, src, dst, why", [
    ("pipeline", P.WAITING, P.COMPLETED, "an outcome is applied (RUNNING) before the pipeline can end"),
    ("pipeline", P.PARKED, P.WAITING, "a parked pipeline runs again before it starts a task"),
    ("pipeline", P.COMPLETED, P.RUNNING, "an ended pipeline never runs again"),
    ("token", T.DENIED, T.DISCARDED, "on_deny is per step: a discarding step never keeps a denied token"),
    ("token", T.ADMITTED, T.READY, "an admitted token became a step run"),
    ("token", T.BUFFERED, T.ADMITTED, "a buffered token only runs as part of its join"),
    ("loop", L.WAITING, L.COMPLETED, "a loop closes only from a fill pass"),
    ("loop", L.WAITING, L.WAITING, "an iteration's end always fills again"),
    ("loop", L.COMPLETED, L.FILLING, "a closed loop never fills again"),
])
def test_impossible_moves_raise(layer, src, dst, why):
    with pytest.raises(InvalidTransition):
        move(layer, src, dst)


@pytest.mark.parametrize("layer", sorted(ENGINE_TABLES))
def test_every_state_is_reachable_and_can_end(layer):
    table = ENGINE_TABLES[layer]
    initial = next(iter(table))[0]
    states = {s for pair in table for s in pair} | {initial}
    assert states == set(type(initial)), "a state no move reaches or leaves"
    reach, frontier = {initial}, [initial]
    while frontier:
        src = frontier.pop()
        for (a, b) in table:
            if a == src and b not in reach:
                reach.add(b)
                frontier.append(b)
    assert reach == states
    for state in states - ENGINE_TERMINAL[layer]:
        assert any(a == state for (a, _b) in table), f"{state} is a dead end"


def test_pipeline_actions_are_the_dsl_task_actions():
    assert {a.value for a in PipelineAction} == set(get_args(TaskAction))


GATED = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: gated}, {step: side}]}
  - step: gated
    spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", then: {allow: true}}]}}}
    tool: {kind: noop}
  - step: side
    tool: {kind: python, code: x}
"""


def test_a_denied_token_stays_denied_until_a_ctx_change_admits_it():
    from noetl_temporal.engine.messages import PatchCtx

    r = run(GATED, hold=lambda cmd: True)     # the side step keeps the execution open
    (token,) = r.state.tokens
    assert token.state is TokenState.DENIED and token.denied
    feed(r, PatchCtx(now="2026-01-01T00:00:01Z", patch={"other": 1}))   # still not approved
    assert token.state is TokenState.DENIED
    feed(r, PatchCtx(now="2026-01-01T00:00:02Z", patch={"approved": True}))
    assert token.state is TokenState.ADMITTED and not r.state.tokens
    feed(r, finished(r.held.pop(), ok(1)))
    assert r.status == "COMPLETED" and r.steps_started() == ["start", "side", "gated"]


def test_pipelines_wait_for_their_task_and_end_in_a_terminal_state():
    r = run("""
    workflow:
      - step: s
        tool:
          - {name: a, kind: python, code: x}
          - {name: b, kind: noop}
    """, hold=lambda cmd: True)
    (step_run,) = r.state.step_runs.values()
    pipe = step_run.main
    assert pipe.state is PipelineState.WAITING and pipe.in_flight
    cmd = r.held.pop()
    feed(r, finished(cmd, ok(1)))
    assert pipe.state is PipelineState.COMPLETED and r.status == "COMPLETED"


LEGACY = """
workload: {items: [1, 2, 3]}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: each}, {step: gated}]}
  - step: each
    loop: {in: "{{ workload.items }}", iterator: n, spec: {mode: parallel, max_in_flight: 2}}
    tool: {kind: python, code: x}
  - step: gated
    spec: {policy: {admit: {rules: [{when: "{{ ctx.go }}", then: {allow: true}}]}}}
    tool: {kind: noop}
"""


def _as_legacy(data: dict) -> dict:
    """A snapshot as written before pipelines, tokens and loops had a state."""
    for token in data["tokens"]:
        token["denied"] = token.pop("state") == "DENIED"
    for step_run in data["step_runs"].values():
        for pipe in [step_run["main"], *step_run["iterations"].values()]:
            if pipe:
                state = pipe.pop("state")
                pipe.update(finished=state in ("COMPLETED", "FAILED", "CANCELLED"),
                            failed=state in ("FAILED", "CANCELLED"), cancelled=state == "CANCELLED")
        if step_run["loop"]:
            step_run["loop"].pop("state")
            step_run["loop"]["filling"] = False
    return data


@pytest.mark.parametrize("legacy", [False, True])
def test_snapshots_carry_the_states_and_old_snapshots_still_restore(legacy):
    r = run(LEGACY, hold=lambda cmd: True)
    data = json.loads(json.dumps(snapshot(r.state)))
    if legacy:
        data = _as_legacy(data)
    r.state = restore(playbook(LEGACY), data)
    (step_run,) = r.state.step_runs.values()
    assert step_run.loop.state is LoopState.WAITING
    assert {p.state for p in step_run.iterations.values()} == {PipelineState.WAITING}
    while r.held:
        feed(r, finished(r.held.pop(0), ok(1)))
    assert r.types("loop.iteration.done") == ["loop.iteration.done"] * 3
    (token,) = r.state.tokens           # the gate's token, denied, survives the round trip
    assert token.state is TokenState.DENIED
