"""What one task invocation is given: its configuration rendered once before the first
attempt (templates that read ``keychain`` are left for the activity), and the ``RunTask``
command with the policy rules and the names their guards read, the timeout and the
layered tool spec.
"""

from __future__ import annotations

from typing import Any

from ..dsl.models import Step, Task
from ..templates import reads_name, referenced_names, render_value
from .common import plain
from .context import Scope, deep_merge
from .messages import RunTask
from .policy import max_policy_attempts
from .state import ExecutionState, PipelineRun, StepRun

__all__ = ["render_config", "run_task_command"]

# Names a policy guard gets from the activity's own outcome, not from the engine.
_OUTCOME_NAMES = ("output", "outcome", "_attempt")
_READS_KEYCHAIN = reads_name("keychain")
_CONTROL_KEYS = frozenset({"policy", "failure", "lifecycle", "entry_step", "final_step", "no_next_is_error",
                           "max_jumps", "max_step_runs", "timeout_s", "mode", "max_in_flight", "result"})


def render_config(step_def: Step, task: Task, context: Scope) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's rendered configuration, and the context its secret templates need.

    Templates that read ``keychain`` are left for the activity, which alone resolves
    secrets; the other names those templates read are handed over as plain values.
    """
    config = dict(task.config)
    if step_def.input:
        merged = dict(step_def.input)
        merged.update(config.get("input") or {})
        config["input"] = merged
    rendered = render_value(config, context, where=f"{step_def.step}.tool.{task.name}", defer=_READS_KEYCHAIN)
    secret_context: dict[str, Any] = {}
    deferred = _deferred_strings(config)
    if deferred:
        names = referenced_names(deferred) - {"keychain"}
        secret_context = plain({k: v for k, v in context.pick(names).items() if not callable(v)})
    return rendered, secret_context


def _deferred_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if _READS_KEYCHAIN(value) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _deferred_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _deferred_strings(v)]
    return []


def run_task_command(state: ExecutionState, run: StepRun, pipe: PipelineRun, step_def: Step, task: Task,
                     task_run_id: str, context: Scope, config: dict[str, Any],
                     secret_context: dict[str, Any]) -> RunTask:
    rules = [r.model_dump() for r in task.spec.policy.rules] if task.spec.policy else []
    names = referenced_names([r.get("when") for r in rules]) - set(_OUTCOME_NAMES)
    policy_context = context.pick(names)
    timeout = task.spec.timeout or step_def.spec.timeout or _default_timeout(state)
    return RunTask(task_run_id=task_run_id, execution_id=state.execution_id, step=run.step,
                   step_run_id=run.id, task=task.name, kind=task.kind, config=config,
                   rules=rules, policy_context=plain(policy_context),
                   max_attempts=max_policy_attempts(rules), timeout=timeout,
                   iteration=pipe.iteration, secret_context=secret_context,
                   keychain=[k.model_dump(mode="json") for k in state.playbook.keychain],
                   result_spec=task.spec.result.model_dump(mode="json", exclude_none=True)
                   if task.spec.result else {},
                   spec=_layered_spec(state, step_def, task), source=state.source)


def _default_timeout(state: ExecutionState) -> float | None:
    defaults = state.playbook.executor.spec.policy.get("defaults") or {}
    value = defaults.get("timeout_s")
    return float(value) if isinstance(value, int | float) else None


def _layered_spec(state: ExecutionState, step_def: Step, task: Task) -> dict[str, Any]:
    """Tool knobs: executor.spec < step.spec < loop.spec < task.spec (maps merge, lists replace).

    Control-plane keys (policies, routing, lifecycle) are not tool knobs and are left out.
    """
    layers = [state.playbook.executor.spec.model_dump(mode="json", exclude_none=True),
              step_def.spec.model_dump(mode="json", exclude_none=True),
              step_def.loop.spec.model_dump(mode="json", exclude_none=True) if step_def.loop else {},
              task.spec.model_dump(mode="json", exclude_none=True)]
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, {k: v for k, v in layer.items() if k not in _CONTROL_KEYS})
    return merged
