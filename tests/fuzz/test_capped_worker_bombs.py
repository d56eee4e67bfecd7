"""Issue 38, "What was found", case by case against a worker in its own process under a
memory cap (``RLIMIT_AS``, the project rule's ``ulimit -v``; tests/support/capped_worker.py),
with the dev server outside the cap.

Each bomb must end FAILED (or be refused) cleanly and located, in under 30 s, while the very
same worker process lives on and serves a small playbook; background processes a task left
must be gone when it ends, and a cancel must take effect. On the code before issue 38 the
size bombs made the worker allocate 1.4-2.9 GB: under the cap that ends the worker, which
``alive()`` catches. ``scale`` tier (``fuzz/``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from noetl_temporal.cli.locations import locate_message
from noetl_temporal.client.connect import start_execution
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine.payload_size import MAX_PAYLOAD_SIZE
from noetl_temporal.errors import PayloadTooLarge
from tests.support.capped_worker import MEMORY_CAP, REPO, CappedWorker, cancel_and_wait
from tests.support.processes import pid_alive, wait_dead

# The template bombs that bypassed a size or work check (tests/templates/test_template_bounds.py
# renders each in a child; here they run where users put them, on a real worker).
BOMBS = [
    "{{ 'x'.encode().ljust(1500000000) }}",
    "{{ range(150) | join('x' * 9000000) }}",
    "{{ ('%(a)s' * 1000) % {'a': 'x' * 9000000} }}",
    "{{ ('{0}' * 1000).format('x' * 9000000) }}",
    "{{ '{:1.1500000000f}'.format(1.0) }}",
    "{{ ([[1, [2, [3]]]] * 1000) | tojson(indent=1000000) }}",
    "{{ ('9' * 4300) | int + ('9' * 4300) | int }}",
    "{{ ('x' * 9000000) | sort | list | length }}",
    "{{ ([{'a': 1}] * 100000) | selectattr('x' * 9000000) | list }}",
    "{% set a = 'x' * 9000000 %}{% for i in range(1000) %}{{ a[i:] | length }}{% endfor %}",
    "{% set a = 'x' * 9000000 %}{% set b = 'x' * 9000000 %}"
    "{% for i in range(990) %}{% for j in range(990) %}{% if a < b %}{% endif %}{% endfor %}{% endfor %}",
]

# A task-only filter (a quadratic C call no budget can interrupt) where the workflow renders
# it: refused before anything starts, located.
URLIZE_IN_NOOP = """
workflow:
  - step: start
    tool: {kind: noop, result: {v: "{{ ('.' * 100000 ~ 'a.') | urlize }}"}}
"""

# Workflow context: an arc's ``set`` and a noop's result render inside the workflow.
IN_SET = """
workflow:
  - step: start
    tool: {{kind: noop}}
    next:
      arcs:
        - step: end
          set:
            ctx.v: {bomb}
  - step: end
    tool: {{kind: noop}}
"""

IN_NOOP = """
workflow:
  - step: start
    tool: {{kind: noop, result: {{v: {bomb}}}}}
"""

# Task context: rendered for the task, never on the worker's main process.
IN_SHELL = """
workflow:
  - step: start
    tool: {{kind: shell, cmd: {bomb}}}
"""

SMALL = """
workflow:
  - step: start
    tool: {kind: noop, result: {n: 1}}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: shell, cmd: "echo {{ start.n }}"}
"""

# 700 MB: over the 512 MiB hard cap. The old path read it whole, about 4x its size in the
# worker: past the cap.
HUGE_RESULT = """
workflow:
  - step: big
    tool:
      kind: python
      code: |
        def main():
            return "x" * 700_000_000
"""


def _loaded(text: str, name: str = "bomb.yaml"):
    return load_playbook_text(textwrap.dedent(text), name)


async def _small_completes(client, task_queue: str) -> float:
    started = time.monotonic()
    handle = await start_execution(client, _loaded(SMALL).playbook, task_queue=task_queue, execution_timeout_s=60)
    output = await asyncio.wait_for(workflow_output(handle), timeout=45)
    assert output["state"] == "COMPLETED", output
    return time.monotonic() - started


def _reason(output: dict) -> str:
    result = output.get("result")
    reason = result.get("reason") if isinstance(result, dict) else None
    return str(reason or output.get("error") or output)


@pytest.fixture
def worker(temporal, task_queue, tmp_path):
    with CappedWorker(temporal.address, task_queue, tmp_path / "worker.log") as capped:
        assert capped.limit() == MEMORY_CAP   # the cap is really on the worker, not on the test
        yield capped
        assert capped.alive(), f"the capped worker died: {capped.tail()}"


@pytest.mark.parametrize("shape", [IN_SET, IN_NOOP, IN_SHELL], ids=["set", "noop-result", "shell-cmd"])
async def test_template_bombs_fail_located_and_the_capped_worker_serves_meanwhile(temporal, task_queue, worker,
                                                                                   shape):
    client = temporal.client
    books = [_loaded(shape.format(bomb=json.dumps(bomb))) for bomb in BOMBS]
    started = time.monotonic()
    handles = [await start_execution(client, book.playbook, task_queue=task_queue, execution_timeout_s=120)
               for book in books]
    small = await _small_completes(client, task_queue)
    print(f"small playbook beside {len(books)} bombs: {small:.1f} s")
    for bomb, book, handle in zip(BOMBS, books, handles, strict=True):
        output = await asyncio.wait_for(workflow_output(handle), timeout=60)
        assert output["state"] == "FAILED", (bomb, output)
        reason = _reason(output)
        assert "(limit " in reason and "MAX_" in reason, (bomb, reason)
        assert "Traceback" not in reason and "internal engine error" not in reason, (bomb, reason)
        located = locate_message(book, reason[reason.index("start."):]) if "start." in reason else None
        assert located is not None and located.startswith("bomb.yaml:"), (bomb, reason)
        assert worker.alive(), f"{bomb} ended the worker: {worker.tail()}"
    elapsed = time.monotonic() - started
    print(f"{len(books)} bombs failed in {elapsed:.1f} s")
    assert elapsed < 30, "the bombs were not stopped by their limits"
    assert await _small_completes(client, task_queue) < 45


def _cli_run(temporal, task_queue: str, book, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(book), "--address",
                           temporal.address, "--task-queue", task_queue, "--no-worker", *extra],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=60)


async def test_a_task_only_filter_in_the_workflow_is_refused_located(temporal, task_queue, worker, tmp_path):
    book = tmp_path / "bomb.yaml"
    book.write_text(textwrap.dedent(URLIZE_IN_NOOP))
    started = time.monotonic()
    cli = _cli_run(temporal, task_queue, book)
    assert cli.returncode != 0 and "Traceback" not in cli.stderr, cli.stderr[-2000:]
    assert f"{book}:4:" in cli.stderr and "NTL706" in cli.stderr and "fix:" in cli.stderr, cli.stderr[-2000:]
    assert time.monotonic() - started < 30
    assert worker.alive()
    assert await _small_completes(temporal.client, task_queue) < 45


async def test_a_huge_payload_is_refused_at_the_cli_and_the_client(temporal, task_queue, worker, tmp_path):
    client = temporal.client
    book = tmp_path / "small.yaml"
    book.write_text(textwrap.dedent(SMALL))
    big = tmp_path / "payload.json"
    big.write_text(json.dumps({"items": list(range(10_000_000))}))   # the 88 MB, 10M items
    started = time.monotonic()
    cli = _cli_run(temporal, task_queue, book, "--payload", f"@{big}")
    assert cli.returncode == 2, (cli.returncode, cli.stderr[-2000:])
    assert "limit MAX_PAYLOAD_SIZE" in cli.stderr and "Traceback" not in cli.stderr, cli.stderr[-2000:]
    assert time.monotonic() - started < 30
    with pytest.raises(PayloadTooLarge, match="limit MAX_PAYLOAD_SIZE"):
        await start_execution(client, _loaded(SMALL).playbook, task_queue=task_queue, execution_timeout_s=60,
                              payload={"items": [0] * (MAX_PAYLOAD_SIZE + 1)})
    assert worker.alive()
    assert await _small_completes(client, task_queue) < 45


async def test_a_huge_python_result_fails_with_its_size_and_the_worker_lives(temporal, task_queue, worker):
    client = temporal.client
    started = time.monotonic()
    handle = await start_execution(client, _loaded(HUGE_RESULT).playbook, task_queue=task_queue,
                                   execution_timeout_s=120)
    small = await _small_completes(client, task_queue)
    print(f"small playbook beside a 700 MB result: {small:.1f} s")
    output = await asyncio.wait_for(workflow_output(handle), timeout=60)
    assert output["state"] == "FAILED", output
    reason = _reason(output)
    assert "700,000,002 bytes" in reason and "NOETL_MAX_RESULT_BYTES" in reason, reason
    assert time.monotonic() - started < 30
    assert worker.alive(), f"a huge result ended the worker: {worker.tail()}"


FORKS = """
import os, time
pid = os.fork()
if pid == 0:
    os.setsid()
    open({pidfile!r}, "w").write(str(os.getpid()))
    time.sleep(120)
    os._exit(0)
while not os.path.exists({pidfile!r}):
    time.sleep(0.01)
{then}
"""


async def test_background_processes_die_with_their_task_and_cancel_takes_effect(temporal, task_queue, worker,
                                                                                 tmp_path):
    client = temporal.client
    shell = (f"nohup sh -c 'echo $$ > {tmp_path}/nohup.pid; exec sleep 120' >/dev/null 2>&1 & "
             f"setsid sh -c 'echo $$ > {tmp_path}/setsid.pid; exec sleep 120' >/dev/null 2>&1 & "
             f"while [ ! -s {tmp_path}/nohup.pid ] || [ ! -s {tmp_path}/setsid.pid ]; do sleep 0.02; done")
    completes = f"""
    workflow:
      - step: start
        tool: {{kind: python, code: {json.dumps(FORKS.format(pidfile=str(tmp_path / 'py.pid'), then='result = 1'))}}}
        next: {{arcs: [{{step: sh}}]}}
      - step: sh
        tool: {{kind: shell, cmd: {json.dumps(shell)}}}
    """
    spins = f"""
    workflow:
      - step: spin
        tool: {{kind: python, code: {json.dumps(FORKS.format(pidfile=str(tmp_path / 'spin.pid'),
                                                             then='while True: pass'))}}}
    """
    pids: list[int] = []
    try:
        spin = await start_execution(client, _loaded(spins).playbook, task_queue=task_queue, execution_timeout_s=120,
                                     heartbeat_timeout_s=2)
        done = await start_execution(client, _loaded(completes).playbook, task_queue=task_queue,
                                     execution_timeout_s=60)
        output = await asyncio.wait_for(workflow_output(done), timeout=45)
        assert output["state"] == "COMPLETED", output
        pids = [int((tmp_path / name).read_text()) for name in ("py.pid", "nohup.pid", "setsid.pid")]
        for pid in pids:
            assert await wait_dead(pid, 5), f"process {pid} outlived the task that started it"

        for _ in range(300):
            if (tmp_path / "spin.pid").exists() and (tmp_path / "spin.pid").read_text():
                break
            await asyncio.sleep(0.1)
        pids.append(int((tmp_path / "spin.pid").read_text()))
        info, took = await cancel_and_wait(client, spin.id)
        assert info.state == "CANCELLED", info
        assert took < 30
        assert await wait_dead(pids[-1], 10), "the cancelled task's setsid() child outlived it"
        assert worker.alive()
    finally:
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
