"""Task policies on Temporal: retries are Temporal activity retries; pipelines; loops."""

from __future__ import annotations

import time
import uuid

import pytest

pytestmark = pytest.mark.temporal


def of(report, event_type, entity=None):
    return [e for e in report.events if e["event_type"] == event_type
            and (entity is None or e["entity_id"] == entity)]


async def test_retry_then_success_reports_every_attempt(run_yaml, http_server, temporal):
    key = uuid.uuid4().hex
    report = await run_yaml(f"""
    workflow:
      - step: fetch
        tool:
          kind: http
          url: "{http_server.url('/flaky')}"
          params: {{key: {key}, fail_times: 2}}
          spec:
            policy:
              rules:
                - when: "{{{{ output.status == 'error' and output.error.retryable }}}}"
                  then: {{do: retry, attempts: 4, delay: 0}}
    """)
    assert report.state == "COMPLETED", report.error
    assert http_server.hits(key) == 3
    attempts = of(report, "task.attempt.failed") + of(report, "task.attempt.done")
    assert sorted(e["attempt"] for e in attempts) == [1, 2, 3]
    assert [e["attempt"] for e in of(report, "task.attempt.failed")] == [1, 2]
    assert of(report, "task.done")[0]["attempt"] == 3
    # Temporal itself ran the retries: the activity's history shows the attempt count
    handle = temporal.client.get_workflow_handle(report.execution_id)
    history = await handle.fetch_history()
    scheduled = [e for e in history.events if e.HasField("activity_task_started_event_attributes")]
    assert scheduled[-1].activity_task_started_event_attributes.attempt == 3


async def test_retries_exhausted_route_step_failed(run_yaml, http_server):
    key = uuid.uuid4().hex
    report = await run_yaml(f"""
    workflow:
      - step: fetch
        tool:
          kind: http
          url: "{http_server.url('/flaky')}"
          params: {{key: {key}, fail_times: 10}}
          spec:
            policy:
              rules:
                - when: "{{{{ output.http.status >= 500 }}}}"
                  then: {{do: retry, attempts: 2}}
        next:
          arcs:
            - {{step: fallback, when: "{{{{ event.name == 'step.failed' }}}}"}}
            - {{step: happy}}
      - step: fallback
        tool: {{kind: noop, result: "{{{{ event | default('handled') }}}}"}}
      - step: happy
        tool: {{kind: noop}}
    """)
    assert report.state == "COMPLETED"
    assert http_server.hits(key) == 2
    assert [e["entity_id"] for e in of(report, "step.started")] == ["fetch", "fallback"]
    failed = of(report, "step.failed")[0]
    assert "retries exhausted" in failed["payload"]["outcome"]["error"]["message"]


async def test_different_rules_different_attempts_and_backoff_timing(run_yaml, http_server):
    k429, k401, k404 = (uuid.uuid4().hex for _ in range(3))
    rules = """
            spec:
              policy:
                rules:
                  - when: "{{ output.http.status == 429 or output.http.status >= 500 }}"
                    then: {do: retry, attempts: 3, backoff: exponential, delay: 1}
                  - when: "{{ output.http.status == 401 }}"
                    then: {do: fail}
                  - when: "{{ output.http.status == 404 }}"
                    then: {do: jump, to: fallback}
    """
    t0 = time.monotonic()
    report = await run_yaml(f"""
    workflow:
      - step: limited
        tool:
          - name: call
            kind: http
            url: "{http_server.url('/flaky')}"
            params: {{key: {k429}, fail_times: 2, status: 429}}
{rules}
          - {{name: fallback, kind: noop}}
        next: {{arcs: [{{step: unauthorized}}]}}
      - step: unauthorized
        tool:
          - name: call
            kind: http
            url: "{http_server.url('/flaky')}"
            params: {{key: {k401}, fail_times: 5, status: 401}}
{rules}
          - {{name: fallback, kind: noop}}
        next: {{arcs: [{{step: missing, when: "{{{{ event.name == 'step.failed' }}}}"}}]}}
      - step: missing
        tool:
          - name: call
            kind: http
            url: "{http_server.url('/flaky')}"
            params: {{key: {k404}, fail_times: 5, status: 404}}
{rules}
          - name: never
            kind: python
            code: "raise SystemExit('must be skipped by the jump')"
          - name: fallback
            kind: noop
            result: recovered
    """)
    elapsed = time.monotonic() - t0
    assert report.state == "COMPLETED", report.error
    assert http_server.hits(k429) == 3      # two 429 retried, third call succeeds
    assert http_server.hits(k401) == 1      # 401: failed at once, no retry
    assert http_server.hits(k404) == 1      # 404: jumped
    assert report.steps["missing"]["result"] == "recovered"
    delays = [e["payload"]["meta"]["next_delay_s"] for e in of(report, "task.attempt.failed", "call")
              if e["payload"]["meta"].get("next_delay_s") is not None]
    assert delays == [1.0, 2.0]             # exponential: delay * 2^(n-1)
    assert elapsed >= 3.0                   # Temporal waited the backoff between attempts


async def test_jump_break_pagination_over_http(run_yaml, http_server):
    report = await run_yaml(f"""
    workflow:
      - step: pages
        tool:
          - name: fetch
            kind: http
            url: "{http_server.url('/paged')}"
            params: {{page: "{{{{ ctx.page | default(1) }}}}", size: 10, total: 35}}
          - name: store
            kind: python
            input: {{items: "{{{{ fetch.data.data }}}}", seen: "{{{{ ctx.items | default([]) }}}}"}}
            code: "result = seen + [i['id'] for i in items]"
            spec:
              policy:
                rules:
                  - when: "{{{{ fetch.data.paging.hasMore }}}}"
                    then:
                      do: jump
                      to: fetch
                      set_ctx: {{page: "{{{{ (ctx.page | default(1)) + 1 }}}}", items: "{{{{ output.result }}}}"}}
                  - else:
                      then: {{do: break, set_ctx: {{items: "{{{{ output.result }}}}"}}}}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.ctx["items"] == list(range(1, 36))
    assert len(of(report, "task.done", "fetch")) == 4
    assert report.steps["pages"]["result"] == list(range(1, 36))


async def test_fail_action_and_set_ctx_set_iter(run_yaml):
    report = await run_yaml("""
    workload: {items: [1, 2, 3]}
    workflow:
      - step: each
        loop: {in: "{{ workload.items }}", iterator: n}
        tool:
          - name: square
            kind: python
            input: {n: "{{ n }}"}
            code: "result = n * n"
            spec:
              policy:
                rules:
                  - else: {then: {do: continue, set_iter: {sq: "{{ output.result }}"}, set_ctx: {last: "{{ output.result }}"}}}
          - name: label
            kind: noop
            result: "{{ iter.n }}^2={{ iter.sq }}"
        next: {arcs: [{step: check}]}
      - step: check
        tool:
          kind: python
          code: "result = 1"
          spec: {policy: {rules: [{when: "{{ ctx.last == 9 }}", then: {do: fail}}]}}
    """)
    assert report.steps["each"]["result"]["results"] == ["1^2=1", "2^2=4", "3^2=9"]
    assert report.ctx["last"] == 9
    assert report.state == "FAILED"          # `do: fail` on an ok outcome fails the step
    assert report.steps["check"]["status"] == "FAILED"


async def test_sequential_loop_keeps_order(run_yaml, tmp_path):
    log = tmp_path / "order.log"
    report = await run_yaml(f"""
    workload: {{items: [c, a, b, d]}}
    workflow:
      - step: each
        loop: {{in: "{{{{ workload.items }}}}", iterator: x, spec: {{mode: sequential}}}}
        tool:
          kind: python
          input: {{x: "{{{{ x }}}}"}}
          code: |
            import time, random
            time.sleep(random.random() / 20)
            with open({str(log)!r}, "a") as fh:
                fh.write(x)
            result = x
    """)
    assert report.state == "COMPLETED"
    assert log.read_text() == "cabd"
    assert report.steps["each"]["result"]["results"] == ["c", "a", "b", "d"]


async def test_parallel_loop_never_exceeds_max_in_flight(run_yaml, tmp_path):
    counter = tmp_path / "inflight"
    counter.write_text("0 0")
    report = await run_yaml(f"""
    workload: {{items: "{{{{ range(12) | list }}}}"}}
    workflow:
      - step: each
        loop:
          in: "{{{{ range(12) | list }}}}"
          iterator: i
          spec: {{mode: parallel, max_in_flight: 3}}
        tool:
          kind: python
          input: {{i: "{{{{ i }}}}"}}
          code: |
            import fcntl, time
            path = {str(counter)!r}
            def bump(delta):
                with open(path, "r+") as fh:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                    now, peak = map(int, fh.read().split())
                    now += delta
                    peak = max(peak, now)
                    fh.seek(0); fh.truncate(); fh.write(f"{{now}} {{peak}}")
            bump(1)
            time.sleep(0.15)
            bump(-1)
            result = i
    """)
    assert report.state == "COMPLETED", report.error
    now, peak = map(int, counter.read_text().split())
    assert now == 0
    assert peak == 3          # the tool measured at most 3 at once, and the cap was used
    assert report.steps["each"]["result"]["results"] == list(range(12))


async def test_empty_loop_and_loop_done_routing(run_yaml):
    report = await run_yaml("""
    workload: {items: []}
    workflow:
      - step: each
        loop: {in: "{{ workload.items }}", iterator: x}
        tool: {kind: python, code: "raise RuntimeError('never')"}
        next: {arcs: [{step: after, when: "{{ event.name == 'loop.done' }}"}]}
      - step: after
        tool: {kind: noop, result: "{{ each.count }}"}
    """)
    assert report.state == "COMPLETED"
    assert report.steps["after"]["result"] == 0
    loop_events = [e["event_type"] for e in report.events if e["event_type"].startswith("loop.")]
    assert loop_events == ["loop.started", "loop.done"]


async def test_streaming_pagination_inside_each_parallel_iteration(run_yaml, http_server, tmp_path):
    """fetch -> transform -> store -> jump back while has_more, per loop iteration."""
    out = tmp_path / "store"
    out.mkdir()
    report = await run_yaml(f"""
    workload: {{sources: [{{name: a, total: 23}}, {{name: b, total: 7}}, {{name: c, total: 0}}]}}
    workflow:
      - step: drain
        loop:
          in: "{{{{ workload.sources }}}}"
          iterator: src
          spec: {{mode: parallel, max_in_flight: 3}}
        tool:
          - name: fetch
            kind: http
            url: "{http_server.url('/paged')}"
            params: {{page: "{{{{ iter.page | default(1) }}}}", size: 5, total: "{{{{ src.total }}}}"}}
          - name: transform
            kind: python
            input: {{items: "{{{{ fetch.data.data }}}}"}}
            code: "result = [i['id'] * 10 for i in items]"
          - name: store
            kind: shell
            cmd: "echo '{{{{ transform | join(\\" \\") }}}}' >> {out}/{{{{ src.name }}}}.txt"
            spec:
              policy:
                rules:
                  - when: "{{{{ fetch.data.paging.hasMore }}}}"
                    then: {{do: jump, to: fetch, set_iter: {{page: "{{{{ (iter.page | default(1)) + 1 }}}}"}}}}
                  - else: {{then: {{do: break}}}}
    """)
    assert report.state == "COMPLETED", report.error
    def stored(name):
        return [int(x) for x in (out / f"{name}.txt").read_text().split()]
    assert stored("a") == [i * 10 for i in range(1, 24)]
    assert stored("b") == [i * 10 for i in range(1, 8)]
    assert stored("c") == []
    fetches = [e for e in report.events if e["event_type"] == "task.done" and e["entity_id"] == "fetch"]
    assert sorted(e["iteration"] for e in fetches) == [0, 0, 0, 0, 0, 1, 1, 2]


async def test_large_ctx_and_inputs_stay_out_of_history(run_yaml, temporal):
    """A playbook that grows ctx past Temporal's payload warning limit: the claim check keeps
    every history payload small while the data still reaches tasks and the result."""
    report = await run_yaml("""
    workload: {items: "{{ range(6) | list }}"}
    workflow:
      - step: grow
        loop: {in: "{{ range(6) | list }}", iterator: i}
        tool:
          kind: python
          input: {so_far: "{{ ctx.blob | default('') }}"}
          code: "result = so_far + 'x' * 300000"
          spec: {policy: {rules: [{else: {then: {do: continue, set_ctx: {blob: "{{ output.result }}"}}}}]}}
        next: {arcs: [{step: measure}]}
      - step: measure
        tool: {kind: python, code: "result = len(blob)", input: {blob: "{{ ctx.blob }}"}}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["measure"]["result"] == 1_800_000
    history = await temporal.client.get_workflow_handle(report.execution_id).fetch_history()
    biggest = max(len(e.SerializeToString()) for e in history.events)
    assert biggest < 200_000
