"""Snapshot/restore (continue-as-new) is invisible: a run interrupted by a JSON round trip
of its state ends exactly like one that was not."""

from __future__ import annotations

import json

import pytest

from noetl_temporal.engine.snapshot import restore, snapshot

from .harness import feed, finished, ok, playbook, run

TEXT = """
executor: {spec: {final_step: wrap}}
workload: {items: [1, 2, 3, 4, 5]}
workflow:
  - step: start
    tool: {kind: noop}
    set: {ctx.seen: 0}
    next: {spec: {mode: inclusive}, arcs: [{step: each}, {step: side, args: {tag: s}}]}
  - step: each
    loop: {in: "{{ workload.items }}", iterator: n, spec: {mode: parallel, max_in_flight: 2}}
    tool:
      - {name: work, kind: python, code: x, input: {n: "{{ n }}"}}
      - name: tally
        kind: noop
        result: "{{ work }}"
        spec: {policy: {rules: [{else: {then: {do: continue, set_iter: {t: "{{ n }}"}, set_ctx: {seen: "{{ ctx.seen + 1 }}"}}}}]}}
    next: {arcs: [{step: join}]}
  - step: side
    tool: {kind: python, code: x}
    next: {arcs: [{step: join}]}
  - step: join
    tool: {kind: noop, result: "{{ each.results }}"}
  - step: wrap
    tool: {kind: noop, result: "{{ args.total_steps }}"}
"""


def drive(r, cut_after: int | None):
    """Finish held tasks one by one; after ``cut_after`` of them, round-trip the state."""
    done = 0
    while r.held:
        cmd = r.held.pop(0)
        feed(r, finished(cmd, ok(cmd.config.get("input", {}).get("n", "side"))))
        done += 1
        if done == cut_after:
            data = json.loads(json.dumps(snapshot(r.state)))
            r.state = restore(playbook(TEXT), data)
    return r


@pytest.mark.parametrize("cut_after", [1, 2, 3, 5])
def test_round_trip_mid_run_changes_nothing(cut_after):
    plain = drive(run(TEXT, hold=lambda c: True), None)
    cut = drive(run(TEXT, hold=lambda c: True), cut_after)
    assert cut.status == plain.status == "COMPLETED"
    assert cut.state.step_results == plain.state.step_results
    assert cut.state.ctx == plain.state.ctx
    assert cut.state.log.seq == plain.state.log.seq
    # the restored log continues the sequence: its events are the uninterrupted run's tail
    tail = plain.events[len(plain.events) - len(cut.events):]
    assert cut.events == tail
