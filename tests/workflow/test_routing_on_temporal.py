"""Playbooks run as real Temporal workflows with real tools (python, shell, http)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.temporal


def started(report):
    return [e["entity_id"] for e in report.events if e["event_type"] == "step.started"]


async def test_linear_chain_with_python_shell_and_http(run_yaml, http_server):
    report = await run_yaml(f"""
    workload: {{name: ada}}
    workflow:
      - step: py
        tool:
          kind: python
          input: {{name: "{{{{ workload.name }}}}"}}
          code: |
            def main(name):
                return {{"upper": name.upper()}}
        next: {{arcs: [{{step: sh}}]}}
      - step: sh
        tool: {{kind: shell, cmd: "echo {{{{ py.upper }}}}"}}
        next: {{arcs: [{{step: web}}]}}
      - step: web
        tool: {{kind: http, url: "{http_server.url('/json')}", params: {{who: "{{{{ sh.stdout | trim }}}}"}}}}
    """)
    assert report.state == "COMPLETED", report.error
    assert started(report) == ["py", "sh", "web"]
    assert report.steps["py"]["result"] == {"upper": "ADA"}
    assert report.steps["web"]["result"]["data"]["query"] == {"who": "ADA"}
    assert report.steps["web"]["result"]["status"] == 200


@pytest.mark.parametrize("n, mode, expected", [
    (12, "exclusive", ["start", "big"]),
    (3, "exclusive", ["start", "other"]),
    (12, "inclusive", ["start", "big", "other"]),
])
async def test_exclusive_and_inclusive_routing(run_yaml, n, mode, expected):
    report = await run_yaml(f"""
    workload: {{n: {n}}}
    workflow:
      - step: start
        tool: {{kind: python, code: "result = n", input: {{n: "{{{{ workload.n }}}}"}}}}
        next:
          spec: {{mode: {mode}}}
          arcs:
            - {{step: big, when: "{{{{ start > 10 }}}}"}}
            - {{step: other}}
      - step: big
        tool: {{kind: noop}}
      - step: other
        tool: {{kind: noop}}
    """)
    assert report.state == "COMPLETED"
    assert sorted(started(report)) == sorted(expected)


async def test_exclusive_diamond_and_inclusive_join(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: start
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: fan}, {step: solo}]}
      - step: fan
        tool: {kind: noop}
        next: {arcs: [{step: left, when: "{{ false }}"}, {step: right}]}
      - step: left
        tool: {kind: python, code: "result = 'L'"}
        next: {arcs: [{step: diamond}]}
      - step: right
        tool: {kind: python, code: "import time; time.sleep(0.2); result = 'R'"}
        next: {arcs: [{step: diamond}]}
      - step: diamond
        tool: {kind: noop, result: "{{ right }}"}
        next: {arcs: [{step: join}]}
      - step: solo
        tool: {kind: python, code: "result = 'S'"}
        next: {arcs: [{step: join}]}
      - step: join
        tool: {kind: python, code: "result = [a, b]", input: {a: "{{ diamond }}", b: "{{ solo }}"}}
    """)
    assert report.state == "COMPLETED", report.error
    assert started(report).count("join") == 1
    assert "left" not in started(report)
    assert report.steps["join"]["result"] == ["R", "S"]


async def test_guarded_cycle(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: init
        tool: {kind: noop}
        set: {ctx.n: 0}
        next: {arcs: [{step: loop}]}
      - step: loop
        tool: {kind: python, code: "result = n + 1", input: {n: "{{ ctx.n }}"}}
        set: {ctx.n: "{{ loop }}"}
        next: {arcs: [{step: loop, when: "{{ ctx.n < 3 }}"}, {step: done}]}
      - step: done
        tool: {kind: noop}
    """)
    assert report.state == "COMPLETED"
    assert started(report) == ["init", "loop", "loop", "loop", "done"]
    assert report.ctx["n"] == 3


async def test_admission_deny_and_final_step_summary(run_yaml):
    report = await run_yaml("""
    executor: {spec: {final_step: wrap}}
    workflow:
      - step: start
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: gated}, {step: open}]}
      - step: gated
        spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", then: {allow: true}}]}}}
        tool: {kind: noop}
      - step: open
        tool: {kind: python, code: "result = 1"}
        next: {arcs: [{step: wrap}]}
      - step: wrap
        tool: {kind: python, code: "result = summary", input: {summary: "{{ args }}"}}
    """)
    assert report.state == "COMPLETED"
    assert started(report) == ["start", "open", "wrap"]
    summary = report.steps["wrap"]["result"]
    assert summary["denied_steps"] == ["gated"] and summary["total_steps"] == 2
    assert report.summary["denied_steps"] == ["gated"]


@pytest.mark.parametrize("flag, state", [("false", "COMPLETED"), ("true", "FAILED")])
async def test_no_next_is_error(run_yaml, flag, state):
    report = await run_yaml(f"""
    executor: {{spec: {{no_next_is_error: {flag}}}}}
    workflow:
      - step: a
        tool: {{kind: noop}}
        next: {{arcs: [{{step: b, when: "{{{{ ctx.route == 'b' }}}}"}}]}}
      - step: b
        tool: {{kind: noop}}
    """)
    assert report.state == state


@pytest.mark.parametrize("arcs, state, ran", [
    ("[{step: recover, when: \"{{ event.name == 'call.error' }}\"}, {step: end}]", "COMPLETED", "recover"),
    ("[{step: end}]", "FAILED", "end"),
])
async def test_handled_vs_unhandled_failure(run_yaml, arcs, state, ran):
    report = await run_yaml(f"""
    workflow:
      - step: fetch
        tool: {{kind: python, code: "raise ValueError('bad input')"}}
        next: {{arcs: {arcs}}}
      - step: recover
        tool: {{kind: noop}}
      - step: end
        tool: {{kind: noop}}
    """)
    assert report.state == state
    assert started(report) == ["fetch", ran]
    assert report.summary["failed_steps_count"] == 1
    failed = report.summary["failed_steps"][0]
    assert failed["step"] == "fetch" and "ValueError" in failed["message"]
    if state == "FAILED":
        assert "fetch" in report.error


async def test_payload_deep_merge_and_native_types(run_yaml):
    report = await run_yaml("""
    workload: {db: {host: a, port: 5432}, n: 1}
    workflow:
      - step: s
        tool:
          kind: python
          input: {db: "{{ workload.db }}", n: "{{ workload.n + 1 }}", flag: "{{ workload.n > 0 }}"}
          code: |
            result = {"db": db, "n": n, "types": [type(n).__name__, type(flag).__name__]}
    """, payload={"db": {"host": "b"}})
    assert report.state == "COMPLETED"
    assert report.steps["s"]["result"] == {"db": {"host": "b", "port": 5432}, "n": 2, "types": ["int", "bool"]}


async def test_events_are_ordered_gap_free_and_cover_the_run(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: a
        tool: {kind: python, code: "result = 1"}
    """)
    seqs = [e["seq"] for e in report.events]
    assert seqs == list(range(1, len(seqs) + 1))
    types = [e["event_type"] for e in report.events]
    for needed in ("playbook.started", "workflow.started", "step.started", "task.started",
                   "task.attempt.started", "task.attempt.done", "task.done", "step.done",
                   "workflow.finished", "playbook.finished"):
        assert needed in types
    assert types.count("playbook.finished") == 1
    assert all(e["timestamp"].endswith("Z") for e in report.events)


async def test_spec_layering_gives_tool_defaults_per_kind(run_yaml, http_server):
    """`spec.<kind>` maps layer executor < step < loop < task (maps merge, lists replace);
    the task's own configuration wins."""
    report = await run_yaml(f"""
    executor:
      spec:
        http: {{headers: {{X-Team: data, X-Env: prod}}, params: {{a: "1"}}}}
    workflow:
      - step: calls
        spec:
          http: {{headers: {{X-Env: staging}}}}
        loop:
          in: [1]
          iterator: n
          spec: {{http: {{params: {{b: "2"}}}}}}
        tool:
          - name: echo
            kind: http
            url: "{http_server.url('/echo')}"
            spec: {{http: {{headers: {{X-Task: t1}}}}}}
            headers: {{X-Own: mine}}
    """)
    assert report.state == "COMPLETED", report.error
    echoed = report.steps["calls"]["result"]["results"][0]["data"]
    headers = {k.lower(): v for k, v in echoed["headers"].items()}
    assert headers["x-team"] == "data" and headers["x-env"] == "staging"
    assert headers["x-task"] == "t1" and headers["x-own"] == "mine"
    assert echoed["query"] == {"a": "1", "b": "2"} or echoed["query"] == {"a": ["1"], "b": ["2"]}
