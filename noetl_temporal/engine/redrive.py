"""Redrive: a new execution that reuses what a failed one already did (docs/operations.md).

Pure. The caller (``client/redrive_start.py``) reads the old execution's record (its workflow
input and output, through the Temporal client and the deployment's data converter) and asks
:func:`plan` which recorded step results the new execution may reuse. The plan travels in the
new execution's workflow input (``RunInput.redrive``, size-capped like every input), so a
replay sees the same plan; the engine starts every step as usual and, for a step the plan
holds, finishes its run at once with the recorded result (``reused`` in its events) instead of
sending a task command (:func:`take`). Its ``set`` patches and arcs then run as they did, so the
steps that rerun see the same ctx, args and upstream results they had.

What reruns: every step that ran in the old execution but did not complete once (it failed,
was cancelled, was handled after failing, or ran more than once: a cycle's runs cannot be told
apart by step), the ``--from`` step, every step whose definition changed or is new (a newer
playbook), and everything reachable from any of those in the new playbook's graph (a result
downstream of a rerun step may depend on it). A step the old run never reached has no result
to reuse: it runs if the new run reaches it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..dsl.models import Playbook
from .event_log import EventLog
from .graph import StepGraph
from .status_layers import StepStatus

__all__ = ["plan", "take", "redriven_event", "step_shape", "child_tasks", "child_key", "child_label",
           "payload_digest", "has_loop_children"]

#: a step that ended so once is reused: it completed, or an operator skipped it with the result
#: it gave (which a redrive keeps, as the run that follows it saw it)
_REUSABLE = (StepStatus.COMPLETED.value, StepStatus.SKIPPED.value)


def step_shape(playbook: Playbook, step: str) -> dict[str, Any] | None:
    """What a step's recorded result depends on in its definition: the step as the playbook
    defines it (None: no such step)."""
    return _shapes(playbook).get(step)


def _shapes(playbook: Playbook) -> dict[str, dict[str, Any]]:
    return {item.step: item.model_dump(mode="json", exclude_defaults=True) for item in playbook.workflow}


def plan(*, old_execution_id: str, old_steps: dict[str, Any], old_playbook: Playbook,
         new_playbook: Playbook, new_graph: StepGraph, from_step: str | None = None,
         definition: str = "original", key_origin: str | None = None) -> dict[str, Any]:
    """The redrive plan for the workflow input: ``reuse`` (step -> recorded result) and, for
    the events and the operator, what reruns and why. ``old_steps``: the old output's
    ``steps`` (status, runs, result per step). ``key_origin``: the execution the new one's
    idempotency keys come from (``idempotency.origin_of_plan``; default: the old one)."""
    changed: list[str] = []
    if new_playbook is not old_playbook:   # the original definition: nothing changed
        old_shapes, new_shapes = _shapes(old_playbook), _shapes(new_playbook)
        changed = sorted(name for name in set(old_steps) | set(new_graph.steps)
                         if old_shapes.get(name) != new_shapes.get(name))
    done = {name for name, record in old_steps.items()
            if isinstance(record, dict) and record.get("status") in _REUSABLE
            and int(record.get("runs") or 0) == 1}
    # A step the old run never reached is no seed: if the new run reaches it, it runs anyway.
    seeds = {name for name in old_steps if name not in done} | set(changed)
    if from_step is not None:
        seeds.add(from_step)
    rerun = _reachable(new_graph, seeds & set(new_graph.steps))
    reuse = {name: old_steps[name].get("result") for name in sorted(done - rerun) if name in new_graph.steps}
    iterations = {}
    for name in sorted(seeds - set(changed) - {from_step} - done):
        recorded = _completed_iterations(old_steps.get(name), new_graph, name)
        if recorded is not None and name not in _reachable_after(new_graph, seeds - {name}):
            iterations[name] = recorded
    return {"from_execution_id": old_execution_id, "from_step": from_step, "definition": definition,
            "reuse": reuse, "iterations": iterations, "changed": [name for name in changed if name in done],
            "key_origin": key_origin or old_execution_id}


def child_tasks(*, old_steps: dict[str, Any], old_playbook: Playbook, new_playbook: Playbook,
                new_graph: StepGraph, from_step: str | None = None,
                iterations: dict[str, Any] | None = None) -> list[str]:
    """The sub-playbook tasks whose failed child a redrive redrives inside its own
    (docs/operations.md), as :func:`child_key` keys. A step outside any loop, with a
    ``kind: playbook`` task, that ran once and failed (or was cancelled) in the old run, is not
    the ``--from`` step, has the same definition, and follows no other step that reruns (its
    child's input would be the same). And, for a loop step whose failed iterations alone rerun
    (``iterations``: the plan's, :func:`plan`), each failed iteration's ``kind: playbook`` tasks:
    the new run checks that the child gets the same input before it redrives it
    (:func:`payload_digest`), since its ``loop.in`` is rendered again."""
    done = _done(old_steps)
    seeds = {name for name in old_steps if name not in done}
    if from_step is not None:
        seeds.add(from_step)
    out = []
    for step in new_playbook.workflow:
        name, record = step.step, old_steps.get(step.step)
        tasks = [task.name for task in step.tool if task.kind == "playbook"]
        if not tasks:
            continue
        if step.loop is not None:
            out += [child_key(name, task, index) for index in _failed_iterations((iterations or {}).get(name))
                    for task in tasks]
            continue
        if name == from_step or not isinstance(record, dict) \
                or int(record.get("runs") or 0) != 1 \
                or record.get("status") not in (StepStatus.FAILED.value, StepStatus.HANDLED.value,
                                                StepStatus.CANCELLED.value) \
                or step_shape(old_playbook, name) != step_shape(new_playbook, name) \
                or name in _reachable_after(new_graph, seeds - {name}):
            continue
        out += [child_key(name, task) for task in tasks]
    return out


def _failed_iterations(recorded: Any) -> list[int]:
    """The iterations of a loop the plan reruns: those without a recorded result."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("count"), int):
        return []
    kept = recorded.get("results") or {}
    return [index for index in range(recorded["count"]) if str(index) not in kept]


def child_key(step: str, task: str, iteration: int | None = None) -> str:
    """The plan's key of a sub-playbook task's child plan: the prefix of the task run ids of the
    step's first run (``<step>:run:1[:iter:<i>]:task:<task>``, ``pipeline.py``), every attempt of it."""
    return f"{step}:run:1{'' if iteration is None else f':iter:{iteration}'}:task:{task}"


def child_label(key: str) -> str:
    """How a redrive's answer names a child key: its step, ``step[i]`` for a loop's iteration."""
    step, _, rest = key.partition(":run:1")
    return f"{step}[{rest.split(':')[2]}]" if rest.startswith(":iter:") else step


def payload_digest(payload: Any) -> str:
    """A child's input payload, digested to compare the old child's with the new one's."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def has_loop_children(plan: dict[str, Any] | None) -> bool:
    """A plan (or a child plan inside it, at any depth) redrives a loop iteration's child."""
    children = (plan or {}).get("children") or {}
    return any(":iter:" in key or has_loop_children(child) for key, child in children.items())


def _done(old_steps: dict[str, Any]) -> set[str]:
    return {name for name, record in old_steps.items()
            if isinstance(record, dict) and record.get("status") in _REUSABLE
            and int(record.get("runs") or 0) == 1}


def _completed_iterations(record: Any, graph: StepGraph, name: str) -> dict[str, Any] | None:
    """A loop step that ran once and failed: the results of its iterations that completed,
    ``{count, results: {index: result}}``. Only when every iteration ran (``done == count``):
    a loop halted by ``fail_fast`` leaves iterations that never ran, which its result cannot
    tell from ones that returned nothing."""
    if name not in graph.loop_steps or not isinstance(record, dict) or int(record.get("runs") or 0) != 1:
        return None
    result = record.get("result")
    if record.get("status") not in (StepStatus.FAILED.value, StepStatus.HANDLED.value) or not isinstance(result, dict):
        return None
    results, failed, count = result.get("results"), result.get("failed_iterations"), result.get("count")
    if not isinstance(results, list) or not isinstance(failed, list) or count != len(results) \
            or result.get("done") != count:
        return None
    failed_set = set(failed)
    return {"count": count, "results": {str(i): value for i, value in enumerate(results) if i not in failed_set}}


def _reachable_after(graph: StepGraph, seeds: set[str]) -> set[str]:
    """The steps after ``seeds`` (not the seeds themselves, unless a cycle leads back)."""
    after: set[str] = set()
    for seed in seeds & set(graph.steps):
        after |= _reachable(graph, set(graph.successors.get(seed, [])))
    return after


def _reachable(graph: StepGraph, seeds: set[str]) -> set[str]:
    seen, todo = set(seeds), list(seeds)
    while todo:
        for nxt in graph.successors.get(todo.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def take(reuse: dict[str, Any], step: str) -> tuple[bool, Any]:
    """Whether the step's next run reuses a recorded result, and that result. A step is
    reused once: a later run of it (a cycle in the new run) runs for real."""
    if step not in reuse:
        return False, None
    return True, reuse.pop(step)


def redriven_event(*, old_execution_id: str, last_seq: int, now: str, new_execution_id: str,
                   from_step: str | None, definition: str, reused: list[str]) -> dict[str, Any]:
    """The ``execution.redriven`` event that ends the old execution's stream: the envelope of
    every other event, numbered after the last one stored."""
    log = EventLog(old_execution_id)
    log.base = last_seq
    return log.emit("execution.redriven", timestamp=now, entity_id=old_execution_id, status="success",
                    payload={"redriven_by": new_execution_id, "from_step": from_step,
                             "definition": definition, "reused_steps": reused})
