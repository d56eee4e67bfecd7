"""What every invocation of one task shares: the parts of its ``RunTask`` and of its
configuration's rendering that depend on the playbook alone.

A loop runs its task once per item; each of those invocations dumped the keychain, the
result spec and four layers of tool spec from their pydantic models, merged the step's
``input``, and walked the configuration for deferred templates, the same every time
(issue 30: a fifth of the engine's CPU per loop item). A :class:`TaskPlan` holds them,
built on a task's first invocation in an execution and kept in ``ExecutionState.task_plans``.

Derived, never serialized: the snapshot leaves the plans out and a restored run builds
them again from its playbook, so they change nothing a replay or continue-as-new sees.
The plan's values are shared by the commands built from it: nothing may mutate them
(the activity gets its own decoded copy; the workflow only reads a ``RunTask``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import tool_kinds
from ..dsl.models import Playbook, Step, Task
from ..dsl.template_ops import OPERATIONS, task_only
from ..templates import is_template, operations_in, reads_name, referenced_names
from .context import deep_merge
from .idempotency import KEY_NAME, reads_key

__all__ = ["TaskPlan", "task_plan", "READS_KEYCHAIN", "reads_attempt", "reads_activity_name", "uses_task_only", "deferred_strings",
           "OUTCOME_NAMES"]

READS_KEYCHAIN = reads_name("keychain")
reads_attempt = reads_name("_attempt")
# Names a policy guard gets from the activity's own outcome, not from the engine.
OUTCOME_NAMES = ("output", "outcome", "_attempt")
_CONTROL_KEYS = frozenset({"policy", "failure", "lifecycle", "entry_step", "final_step", "no_next_is_error",
                           "max_jumps", "max_step_runs", "timeout_s", "mode", "max_in_flight", "result"})


# The names of the task-only filters and tests: a template that holds none of them as text
# cannot use one, so the usual template costs one scan in C (about 0.1 us), never a parse.
_TASK_ONLY_NAMES = re.compile("|".join(sorted(re.escape(name) for (_, name), op in OPERATIONS.items()
                                              if task_only(op.kind, name))))


def uses_task_only(text: str) -> bool:
    """The template uses a filter or test ``dsl/template_ops`` keeps to tasks (``urlize``...):
    its render may cost more than any budget can stop, so it runs in a child process under
    rlimits, never on a worker's main process (docs/durability.md, "Task-side renders")."""
    return (_TASK_ONLY_NAMES.search(text) is not None and is_template(text)
            and any(task_only(kind, name) is not None for kind, name in operations_in(text)))


def reads_activity_name(text: str) -> bool:
    """The template reads a name only the task's activity knows: ``_attempt`` (this attempt's
    number) or ``_idempotency_key`` (``idempotency.py``)."""
    return reads_attempt(text) or reads_key(text)


def _deferred_in_activity(text: str) -> bool:
    return READS_KEYCHAIN(text) or reads_activity_name(text)


def _deferred_in_render_child(text: str) -> bool:
    return READS_KEYCHAIN(text) or reads_activity_name(text) or uses_task_only(text)


@dataclass(frozen=True)
class TaskPlan:
    """One task's invariants (see the module's docstring)."""

    config: dict[str, Any]        # task.config with the step's input merged in, unrendered
    defer: Callable[[str], bool]  # which of its strings the workflow leaves unrendered
    deferred_names: frozenset[str] | None   # names those read (None: no deferred string)
    rules: list[dict[str, Any]]   # the policy rules as dumped (templated numbers unrendered)
    policy_names: frozenset[str]  # names the rules' guards read from the engine's context
    keychain: list[dict[str, Any]]
    result_spec: dict[str, Any]
    spec: dict[str, Any]          # the layered tool knobs
    on_unmatched: str | None


# perf: a task's merged configuration built per loop item (once per execution instead) — benchmark: probes.workflow_cpu
def task_plan(plans: dict[tuple[str, str], TaskPlan], playbook: Playbook, step_def: Step, task: Task,
              task_side: bool = False) -> TaskPlan:
    """The task's plan from ``plans`` (an execution's ``task_plans``), built there on its
    first invocation. ``task_side``: the execution runs with ``behaviours.TASK_SIDE_RENDERS``
    (the same for every invocation of one execution, so one plan serves them all)."""
    key = (step_def.step, task.name)
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = _build(playbook, step_def, task, task_side)
    return plan


def _build(playbook: Playbook, step_def: Step, task: Task, task_side: bool) -> TaskPlan:
    config = dict(task.config)
    if step_def.input:
        merged = dict(step_def.input)
        merged.update(config.get("input") or {})
        config["input"] = merged
    # A task that runs in the workflow (inline kinds, sub-playbooks) has exactly one
    # attempt: only its keychain templates wait (for the activity that resolves secrets);
    # it may not use a task-only operation (NTL706). An activity's task-only templates wait
    # for its render child (behaviours.TASK_SIDE_RENDERS).
    if task.kind in tool_kinds.IN_WORKFLOW_KINDS:
        picks = READS_KEYCHAIN
    else:
        picks = _deferred_in_render_child if task_side else _deferred_in_activity
    deferred = deferred_strings(config, picks)
    # The renders ask of every string of this same config: a set of the strings picked once
    # answers as the predicate would, at the cost of a hash lookup.
    defer = frozenset(deferred).__contains__
    rules = [r.model_dump() for r in task.spec.policy.rules] if task.spec.policy else []
    return TaskPlan(
        config=config, defer=defer,
        deferred_names=frozenset(referenced_names(deferred) - {"keychain", "_attempt", KEY_NAME}) if deferred else None,
        rules=rules, policy_names=frozenset(referenced_names([r.get("when") for r in rules]) - set(OUTCOME_NAMES)),
        keychain=[k.model_dump(mode="json") for k in playbook.keychain],
        result_spec=task.spec.result.model_dump(mode="json", exclude_none=True) if task.spec.result else {},
        spec=_layered_spec(playbook, step_def, task),
        on_unmatched=task.spec.policy.on_unmatched if task.spec.policy else None)


def deferred_strings(value: Any, predicate: Callable[[str], bool]) -> list[str]:
    if isinstance(value, str):
        return [value] if predicate(value) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in deferred_strings(v, predicate)]
    if isinstance(value, list):
        return [s for v in value for s in deferred_strings(v, predicate)]
    return []


def _layered_spec(playbook: Playbook, step_def: Step, task: Task) -> dict[str, Any]:
    """Tool knobs: executor.spec < step.spec < loop.spec < task.spec (maps merge, lists replace).

    Control-plane keys (policies, routing, lifecycle) are not tool knobs and are left out.
    """
    layers = [playbook.executor.spec.model_dump(mode="json", exclude_none=True),
              step_def.spec.model_dump(mode="json", exclude_none=True),
              step_def.loop.spec.model_dump(mode="json", exclude_none=True) if step_def.loop else {},
              task.spec.model_dump(mode="json", exclude_none=True)]
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, {k: v for k, v in layer.items() if k not in _CONTROL_KEYS})
    return merged
