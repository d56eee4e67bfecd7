"""What one task invocation is given: its configuration rendered once before the first
attempt (templates that read ``keychain`` or ``_attempt`` are left for the activity), and
the ``RunTask`` command with the policy rules and the names their guards read, the
timeout and the layered tool spec.
"""

from __future__ import annotations

from typing import Any

from ..dsl.models import Step, Task
from ..templates import reads_name, referenced_names, render_value
from .common import plain
from .context import Scope, deep_merge
from .failure import task_timeout_default
from .messages import RunTask
from .numbers import render_retry_numbers
from .policy_evaluation import max_policy_attempts
from .state import ExecutionState, PipelineRun, StepRun

__all__ = ["render_config", "render_attempt", "reads_attempt", "run_task_command", "task_rules"]

# Names a policy guard gets from the activity's own outcome, not from the engine.
_OUTCOME_NAMES = ("output", "outcome", "_attempt")
_READS_KEYCHAIN = reads_name("keychain")
reads_attempt = reads_name("_attempt")
_CONTROL_KEYS = frozenset({"policy", "failure", "lifecycle", "entry_step", "final_step", "no_next_is_error",
                           "max_jumps", "max_step_runs", "timeout_s", "mode", "max_in_flight", "result"})


def _deferred(text: str) -> bool:
    return _READS_KEYCHAIN(text) or reads_attempt(text)


def render_config(step_def: Step, task: Task, context: Scope, *,
                  in_activity: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's rendered configuration, and the context its deferred templates need.

    Templates that read ``keychain`` are left for the activity, which alone resolves
    secrets; so are templates that read ``_attempt``, which only the activity knows on
    each attempt (Temporal retries included). The workflow never renders them, so replay
    stays deterministic. The other names those templates read are handed over as plain
    values. A task that runs in the workflow (``in_activity=False``: inline kinds,
    sub-playbooks) has exactly one attempt: its ``_attempt`` templates render here as 1.
    """
    config = dict(task.config)
    if step_def.input:
        merged = dict(step_def.input)
        merged.update(config.get("input") or {})
        config["input"] = merged
    defer = _deferred if in_activity else _READS_KEYCHAIN
    rendered = render_value(config, context, where=f"{step_def.step}.tool.{task.name}", defer=defer)
    secret_context: dict[str, Any] = {}
    deferred = _deferred_strings(config, defer)
    if deferred:
        names = referenced_names(deferred) - {"keychain", "_attempt"}
        secret_context = plain({k: v for k, v in context.pick(names).items() if not callable(v)})
    return rendered, secret_context


def render_attempt(config: dict[str, Any], context: dict[str, Any], attempt: int) -> dict[str, Any]:
    """Inside the activity: render the deferred strings that read ``_attempt`` (and not
    ``keychain``: the keychain step renders those, with ``_attempt`` in its context)."""
    if not _deferred_strings(config, reads_attempt):
        return config
    scope = dict(context, _attempt=attempt)
    rendered: dict[str, Any] = render_value(config, scope, where="tool",
                                            defer=lambda text: _READS_KEYCHAIN(text) or not reads_attempt(text))
    return rendered


def _deferred_strings(value: Any, predicate: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if predicate(value) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _deferred_strings(v, predicate)]
    if isinstance(value, list):
        return [s for v in value for s in _deferred_strings(v, predicate)]
    return []


def task_rules(run: StepRun, task: Task, context: Scope) -> list[dict[str, Any]]:
    """The task's policy rules as the activity gets them, templated retry numbers rendered
    (once per task run: every attempt sees the same numbers). Raises ``TemplateError``."""
    rules = [r.model_dump() for r in task.spec.policy.rules] if task.spec.policy else []
    return render_retry_numbers(rules, context, f"{run.step}.tool.{task.name}.spec.policy")


def run_task_command(state: ExecutionState, run: StepRun, pipe: PipelineRun, step_def: Step, task: Task,
                     task_run_id: str, context: Scope, config: dict[str, Any],
                     secret_context: dict[str, Any], rules: list[dict[str, Any]]) -> RunTask:
    names = referenced_names([r.get("when") for r in rules]) - set(_OUTCOME_NAMES)
    policy_context = context.pick(names)
    timeout = task.spec.timeout or task_timeout_default(state, step_def) or _default_timeout(state)
    return RunTask(task_run_id=task_run_id, execution_id=state.execution_id, step=run.step,
                   step_run_id=run.id, task=task.name, kind=task.kind, config=config,
                   rules=rules, policy_context=plain(policy_context),
                   max_attempts=max_policy_attempts(rules), timeout=timeout,
                   iteration=pipe.iteration, secret_context=secret_context,
                   keychain=[k.model_dump(mode="json") for k in state.playbook.keychain],
                   result_spec=task.spec.result.model_dump(mode="json", exclude_none=True)
                   if task.spec.result else {},
                   spec=_layered_spec(state, step_def, task), source=state.source,
                   on_unmatched=task.spec.policy.on_unmatched if task.spec.policy else None)


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
