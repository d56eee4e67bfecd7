"""Issue 41's "a 1,000-item loop with 3 failures redrives 3 items", on the dev server through
``noetl-temporal redrive``: a parallel loop of 1,000 python tasks where 3 items fail until a
flag file exists; after the fix the redrive runs exactly 3 tools (every invocation appends its
item to a file) and the loop's result is complete (docs/operations.md, "Loops")."""

from __future__ import annotations

import json

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from tests.cli.test_cli_redrive import cli

pytestmark = pytest.mark.temporal

ITEMS = 1000
FAILING = (7, 500, 993)

LOOP = f"""
metadata: {{name: loop-redrive-1000}}
workflow:
  - step: each
    loop: {{in: "{{{{ range({ITEMS}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: 50}}}}
    tool:
      kind: python
      input: {{dir: "{{{{ workload.dir }}}}", i: "{{{{ i }}}}"}}
      code: |
        import pathlib
        d = pathlib.Path(dir)
        with open(d / 'calls', 'a') as f: f.write(f'{{i}}\\n')
        if i in {list(FAILING)} and not (d / 'flag').exists():
            raise RuntimeError(f'item {{i}}: flag file missing')
        result = i * 10
    next: {{arcs: [{{step: total, when: "{{{{ event.name == 'loop.done' and event.status == 'ok' }}}}"}}]}}
  - step: total
    tool: {{kind: python, input: {{r: "{{{{ each.results }}}}"}}, code: "result = [sum(r), len(r)]"}}
"""


def _calls(tmp_path) -> list[int]:
    return [int(line) for line in (tmp_path / "calls").read_text().split()]


async def test_a_1000_item_loop_with_3_failures_redrives_3_items(temporal, task_queue, tmp_path):
    async with build_worker(temporal.client, task_queue=task_queue):
        playbook = load_playbook_text(LOOP).playbook
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=600,
                                       payload={"dir": str(tmp_path)})
        output = await workflow_output(handle)
        assert output["state"] == "FAILED"
        first = _calls(tmp_path)
        assert sorted(first) == list(range(ITEMS))   # every item ran once
        assert sorted(output["steps"]["each"]["result"]["failed_iterations"]) == list(FAILING)
        (tmp_path / "flag").write_text("fixed")
        code, out, err = await cli("redrive", handle.id, "--wait", "--address", temporal.address)
        assert code == 0, (out, err)
        done = json.loads(out)
        assert done["state"] == "COMPLETED" and done["redriven_from"] == handle.id
        assert sorted(_calls(tmp_path)[len(first):]) == list(FAILING)   # 3 tools ran, not 1,000
        assert done["output"]["steps"]["total"]["result"] == [sum(i * 10 for i in range(ITEMS)), ITEMS]
        # the events say so: 997 iterations reused, 3 task runs of the loop's task
        code, out, _ = await cli("events", done["execution_id"], "--address", temporal.address, "--json",
                                 "--limit", "100000")
        events = [json.loads(line) for line in out.splitlines()]
        reused = [e for e in events if e["event_type"] == "loop.iteration.done" and e["payload"].get("reused")]
        assert len(reused) == ITEMS - len(FAILING)
        ran = sorted(e["iteration"] for e in events
                     if e["event_type"] == "task.started" and e["step_run_id"].startswith("each:"))
        assert ran == list(FAILING)
