"""What one task invocation is given: its configuration rendered once before the first
attempt (templates that read ``keychain`` or ``_attempt`` are left for the activity), and
the ``RunTask`` command with the policy rules and the names their guards read, the
timeout and the layered tool spec.
"""

from __future__ import annotations

from typing import Any

from .. import tool_kinds
from ..dsl.models import Step, Task
from ..templates import render_value
from .behaviours import STORED_RESULT_FIELDS, TASK_SIDE_RENDERS
from .common import plain
from .context import Scope
from .failure import task_timeout_default
from .messages import RunTask
from .numbers import render_retry_numbers
from .policy_evaluation import max_policy_attempts
from .state import ExecutionState, PipelineRun, StepRun
from .stored_results import lazy_parts
from .task_plans import (
    READS_KEYCHAIN,
    TaskPlan,
    deferred_strings,
    reads_activity_name,
    reads_attempt,
    task_plan,
    uses_task_only,
)

__all__ = ["render_config", "render_attempt", "reads_attempt", "uses_task_only", "READS_KEYCHAIN", "run_task_command", "task_rules"]


def render_config(state: ExecutionState, step_def: Step, task: Task,
                  context: Scope) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's rendered configuration, and the context its deferred templates need.

    Templates that read ``keychain`` are left for the activity, which alone resolves
    secrets; so are templates that read ``_attempt``, which only the activity knows on
    each attempt (Temporal retries included). The workflow never renders them, so replay
    stays deterministic. The other names those templates read are handed over as plain
    values. A task that runs in the workflow (inline kinds, sub-playbooks) has exactly
    one attempt: its ``_attempt`` templates render here as 1 (``task_plans``). With
    ``behaviours.TASK_SIDE_RENDERS`` templates that use a task-only filter or test wait
    too: the activity renders them in a child process (docs/durability.md).
    """
    plan = _plan(state, step_def, task)
    where = f"{step_def.step}.tool.{task.name}"
    if task.kind in tool_kinds.IN_WORKFLOW_KINDS or STORED_RESULT_FIELDS not in state.behaviours:
        rendered = render_value(plan.config, context, where=where, defer=plan.defer)
    else:  # its activity reads a stored result's part the workflow does not hold
        with lazy_parts():
            rendered = render_value(plan.config, context, where=where, defer=plan.defer)
    secret_context: dict[str, Any] = {}
    if plan.deferred_names is not None:
        secret_context = plain({k: v for k, v in context.pick(plan.deferred_names).items() if not callable(v)})
    return rendered, secret_context


def _plan(state: ExecutionState, step_def: Step, task: Task) -> TaskPlan:
    return task_plan(state.task_plans, state.playbook, step_def, task, TASK_SIDE_RENDERS in state.behaviours)


def render_attempt(config: dict[str, Any], context: dict[str, Any], attempt: int) -> dict[str, Any]:
    """Inside the activity: render the deferred strings that read ``_attempt`` or
    ``_idempotency_key`` (``context`` holds the key) (and not ``keychain``: the keychain step
    renders those, with both in its context; nor those that use a task-only operation: the
    render child does, ``tools/task_renders.py``)."""
    if not deferred_strings(config, reads_activity_name):
        return config
    scope = dict(context, _attempt=attempt)
    rendered: dict[str, Any] = render_value(
        config, scope, where="tool",
        defer=lambda text: READS_KEYCHAIN(text) or not reads_activity_name(text) or uses_task_only(text))
    return rendered


def task_rules(state: ExecutionState, run: StepRun, step_def: Step, task: Task,
               context: Scope) -> list[dict[str, Any]]:
    """The task's policy rules as the activity gets them, templated retry numbers rendered
    (once per task run: every attempt sees the same numbers). Raises ``TemplateError``."""
    rules = _plan(state, step_def, task).rules
    return render_retry_numbers(rules, context, f"{run.step}.tool.{task.name}.spec.policy") if rules else []


def run_task_command(state: ExecutionState, run: StepRun, pipe: PipelineRun, step_def: Step, task: Task,
                     task_run_id: str, context: Scope, config: dict[str, Any],
                     secret_context: dict[str, Any], rules: list[dict[str, Any]]) -> RunTask:
    plan = _plan(state, step_def, task)
    policy_context = context.pick(plan.policy_names)
    timeout = task.spec.timeout or task_timeout_default(state, step_def) or _default_timeout(state)
    return RunTask(task_run_id=task_run_id, execution_id=state.execution_id, step=run.step,
                   step_run_id=run.id, task=task.name, kind=task.kind, config=config,
                   rules=rules, policy_context=plain(policy_context) if policy_context else {},
                   max_attempts=max_policy_attempts(rules), timeout=timeout,
                   iteration=pipe.iteration, secret_context=secret_context,
                   keychain=plan.keychain, result_spec=_result_spec(state, plan, run.step, task),
                   spec=plan.spec, source=state.source,
                   on_unmatched=plan.on_unmatched)


#: a pipeline-local name bound to the task's whole result (``output: {as: page}``)
_WHOLE_OUTPUT = ("{{ output }}", "{{output}}", "{{ output.result }}", "{{ output.data }}")


def _result_spec(state: ExecutionState, plan: TaskPlan, step: str, task: Task) -> dict[str, Any]:
    """``task.spec.result``, plus the paths a stored result keeps (``keep``) for executions
    that read stored results through them (behaviours.STORED_RESULT_FIELDS)."""
    if STORED_RESULT_FIELDS not in state.behaviours:
        return plan.result_spec
    names = (step, task.name, *(k for k, v in task.set_vars.items() if v in _WHOLE_OUTPUT))
    return {**plan.result_spec, "keep": list(state.graph.kept_paths(step, task.name, names,
                                                                     plan.result_spec.get("keep")))}


def _default_timeout(state: ExecutionState) -> float | None:
    defaults = state.playbook.executor.spec.policy.get("defaults") or {}
    value = defaults.get("timeout_s")
    return float(value) if isinstance(value, int | float) else None
