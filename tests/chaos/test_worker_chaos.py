"""Chaos: SIGKILL the worker process at random points of running executions, restart it,
and check that every execution ends with the right result, its events are gap-free in
``seq`` with no duplicate ``event_id``, and no task's work was lost (at-least-once: a task
that was running when the worker died runs again; the figure is printed).

The kill delays are random but seeded: the seed is printed, and ``NOETL_CHAOS_SEED`` replays
them (each kill waits for progress, so the exact points also depend on timing).
``docs/durability.md`` records the figures.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import textwrap
import time

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook, load_playbook_text
from noetl_temporal.store.event_store import open_event_store

from .workers import WorkerProcess

pytestmark = [pytest.mark.temporal, pytest.mark.chaos]

KILLS = 5


def _append(log, line: str) -> str:
    """Python task code that appends ``line`` to the run log (one line per task run)."""
    return f"with open({str(log)!r}, 'a') as fh:\n    fh.write({line} + '\\n')\n"


def chain(log) -> str:
    """30 python steps in a row; each adds its index to the previous step's result."""
    lines = ["workflow:"]
    for i in range(30):
        code = textwrap.indent("import time\n" + _append(log, f"'chain {i}'") +
                               f"time.sleep(0.05)\nresult = total + {i}\n", " " * 8)
        total = f"\"{{{{ s{i - 1} }}}}\"" if i else "0"
        lines += [f"  - step: s{i}", "    tool:", "      kind: python", f"      input: {{total: {total}}}",
                  "      code: |", code.rstrip("\n")]
        if i < 29:
            lines.append(f"    next: {{arcs: [{{step: s{i + 1}}}]}}")
    return "\n".join(lines) + "\n"


def loop(log) -> str:
    return textwrap.dedent(f"""
    workflow:
      - step: each
        loop:
          in: "{{{{ range(200) | list }}}}"
          iterator: i
          spec: {{mode: parallel, max_in_flight: 20}}
        tool:
          - {{name: mark, kind: shell, cmd: "echo loop {{{{ i }}}} >> {log} && sleep 0.2 && echo {{{{ i }}}}"}}
          - {{name: keep, kind: noop, result: "{{{{ mark.stdout | trim | int }}}}"}}
        next: {{arcs: [{{step: total}}]}}
      - step: total
        tool: {{kind: noop, result: "{{{{ each.results | sum }}}}"}}
    """)


CHILD = """
workload: {{n: 0}}
workflow:
  - step: one
    tool:
      kind: python
      input: {{n: "{{{{ workload.n }}}}"}}
      code: |
{one}
    next: {{arcs: [{{step: two}}]}}
  - step: two
    tool:
      kind: python
      input: {{n: "{{{{ one }}}}"}}
      code: |
{two}
"""

PARENT = """
workflow:
  - step: call
    loop: {in: "{{ range(4) | list }}", iterator: n, spec: {mode: parallel}}
    tool:
      - {name: sub, kind: playbook, path: child.yaml, return_step: two, input: {n: "{{ n }}"}}
      - {name: keep, kind: noop, result: "{{ sub }}"}
    next: {arcs: [{step: total}]}
  - step: total
    tool: {kind: noop, result: "{{ call.results | sum }}"}
"""


def subplaybook(tmp_path, log) -> str:
    def code(tag: str, expr: str) -> str:
        body = "import time\n" + _append(log, f"'child-{tag} ' + str(n)") + f"time.sleep(0.3)\nresult = {expr}\n"
        return textwrap.indent(body, " " * 8).rstrip("\n")

    (tmp_path / "child.yaml").write_text(CHILD.format(one=code("one", "n + 1"), two=code("two", "n * 10")))
    (tmp_path / "parent.yaml").write_text(PARENT)
    return str(tmp_path / "parent.yaml")


def retrying(log, tries) -> str:
    code = textwrap.indent(textwrap.dedent(f"""\
        import os, time
        with open({str(tries)!r}, 'a') as fh:
            fh.write('x')
        time.sleep(0.5)
        if os.path.getsize({str(tries)!r}) < 3:
            raise RuntimeError('not yet')
        """) + _append(log, "'retry done'") + "result = os.path.getsize(" + repr(str(tries)) + ")\n", " " * 8)
    return ("workflow:\n  - step: flaky\n    tool:\n      kind: python\n      code: |\n" + code +
            "      spec: {policy: {rules: [{when: \"{{ output.status == 'error' }}\", "
            "then: {do: retry, attempts: 10, delay: 0.2}}]}}\n")


def _logged(log) -> int:
    return log.read_text().count("\n") if log.exists() else 0


def _check_events(store, execution_id: str) -> int:
    events = store.read(execution_id, limit=100_000)
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(events) + 1)), f"{execution_id}: seq has gaps or repeats"
    ids = [e["event_id"] for e in events]
    assert len(ids) == len(set(ids)), f"{execution_id}: duplicate event_id"
    assert [e["event_type"] for e in events].count("playbook.finished") == 1
    return len(events)


async def test_worker_sigkilled_at_random_points_loses_no_work(temporal, task_queue, tmp_path):
    seed = int(os.environ.get("NOETL_CHAOS_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\nchaos seed {seed} (NOETL_CHAOS_SEED={seed} replays these random delays)")
    rnd = random.Random(seed)
    log, tries = tmp_path / "runs.log", tmp_path / "tries"
    parent_source = subplaybook(tmp_path, log)
    playbooks = {
        "chain": (load_playbook_text(chain(log)).playbook, None),
        "loop": (load_playbook_text(loop(log)).playbook, None),
        "sub": (load_playbook(parent_source).playbook, parent_source),
        "retry": (load_playbook_text(retrying(log, tries)).playbook, None),
    }
    started = time.monotonic()
    with WorkerProcess(temporal.address, task_queue) as worker:
        handles = {name: await start_execution(temporal.client, pb, task_queue=task_queue, source=source,
                                               heartbeat_timeout_s=5, execution_timeout_s=150)
                   for name, (pb, source) in playbooks.items()}
        results = {name: asyncio.ensure_future(workflow_output(h)) for name, h in handles.items()}
        for kill in range(KILLS):
            # Kill while work runs: once this worker has made progress, after a random delay.
            before = _logged(log)
            while _logged(log) == before and not all(r.done() for r in results.values()):
                await asyncio.sleep(0.05)
            await asyncio.sleep(rnd.uniform(0.0, 1.5))
            if all(r.done() for r in results.values()):
                break
            print(f"kill {kill + 1} at {time.monotonic() - started:.1f}s ({_logged(log)} task runs logged)")
            worker.kill()
            worker.start()
        outputs = {name: await asyncio.wait_for(r, timeout=140) for name, r in results.items()}
    elapsed = time.monotonic() - started

    store = open_event_store()
    failed = {name: [e["payload"] for e in store.read(handles[name].id, limit=100_000)
                     if e.get("status") in ("FAILED", "error")][:3]          # why, if any failed
              for name, o in outputs.items() if o["state"] != "COMPLETED"}
    assert failed == {}
    assert outputs["chain"]["steps"]["s29"]["result"] == sum(range(30))
    assert outputs["loop"]["steps"]["total"]["result"] == sum(range(200))
    assert outputs["sub"]["steps"]["total"]["result"] == sum((n + 1) * 10 for n in range(4))
    assert outputs["retry"]["steps"]["flaky"]["result"] >= 3

    runs = collections.Counter(log.read_text().splitlines())
    expected = ([f"chain {i}" for i in range(30)] + [f"loop {i}" for i in range(200)] +
                [f"child-one {n}" for n in range(4)] + [f"child-two {n + 1}" for n in range(4)] + ["retry done"])
    assert set(runs) - set(expected) == set(), "unexpected log lines"
    assert [task for task in expected if runs[task] == 0] == [], "lost work"
    twice = {task: n for task, n in runs.items() if n > 1}

    ids = [h.id for h in handles.values()]
    children = sorted({e["payload"]["outcome"]["meta"]["child_execution_id"]
                       for e in store.read(handles["sub"].id, limit=100_000, types=["task.done"])
                       if e["entity_id"] == "sub"})
    assert len(children) == 4, children   # one sub-playbook per item, each read back below
    ids += children
    events = sum(_check_events(store, execution_id) for execution_id in ids)
    print(f"chaos: {worker.starts - 1} kills in {elapsed:.1f}s; {len(expected)} task runs expected, "
          f"{sum(runs.values())} logged; {len(twice)} ran more than once {sorted(twice)}; "
          f"{events} events over {len(ids)} executions, gap-free, no duplicate ids")
    assert worker.starts - 1 >= KILLS
