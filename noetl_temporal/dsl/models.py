"""Pydantic models of a NoETL v10 playbook in its *normalized* form.

The loader (``dsl.loader``) turns raw YAML into this shape: every dialect alias
(docs/dialect-aliases.md) is rewritten to its canonical form first (``dsl.normalize``), so the
engine only ever sees one way of saying each thing:

* ``step.tool`` is always a list of :class:`Task` with unique ``name`` labels;
* a task's tool knobs (``code``, ``url``, ``cmd`` ...) live in ``Task.config``;
* ``set:`` blocks are split into ``set_ctx`` / ``set_iter`` / ``set_vars`` maps;
* a policy rule's ``else`` branch is a rule with ``when=None``.

Models forbid unknown fields where the v10 spec is closed (routers, rules, loops), so
a typo is a located validation error rather than a silently ignored key.
"""

from __future__ import annotations

import gc
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

from ..templates import is_template
from ..tool_kinds import TOOL_KINDS

# Tool kinds the runtime can execute (the tool registry's and ``playbook``).
# ``workbook`` is resolved away at load time.
KNOWN_TOOL_KINDS = TOOL_KINDS


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --------------------------------------------------------------------------- templated numbers

def _template_only(value: str) -> str:
    if not is_template(value):
        raise ValueError("expected a number, or a {{ }} template that renders one")
    return value


#: NoETL 5.x templates some numbers (``max_in_flight``, a retry's ``attempts`` and delays):
#: a ``{{ }}`` string stands for the number, rendered once per use and checked then
#: (``engine/numbers.py``); a literal is checked here, as before.
NumberTemplate = Annotated[str, AfterValidator(_template_only)]


# --------------------------------------------------------------------------- patches


class Patches(_Closed):
    """Variable patches applied by a task, a policy action, an arc or a step.

    ``set_ctx`` updates execution-scoped ``ctx``; ``set_iter`` updates the current
    loop iteration's ``iter``; ``set_vars`` binds pipeline-local names visible to
    later tasks of the same step run (the ``set: {name: ...}`` dialect).
    Values are templates, rendered when the patch applies.
    """

    set_ctx: dict[str, Any] = Field(default_factory=dict)
    set_iter: dict[str, Any] = Field(default_factory=dict)
    set_vars: dict[str, Any] = Field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.set_ctx or self.set_iter or self.set_vars)


# --------------------------------------------------------------------------- task policy

#: what Temporal takes: its retry policy counts attempts in 32 bits, and a retry delay or
#: timer must fit a ``timedelta``; a million attempts and a year of delay are far inside both
MAX_RETRY_ATTEMPTS = 1_000_000
MAX_RETRY_DELAY_S = 365 * 86400
#: the longest timeout of any kind (a task attempt, a step run, an execution): ten years, so
#: the ``timedelta`` the workflow hands Temporal always exists (1e30 s overflows it)
MAX_TIMEOUT_S = 10 * 365 * 86400

TaskAction = Literal["continue", "retry", "jump", "break", "fail"]
Backoff = Literal["none", "linear", "exponential"]


class PolicyAction(Patches):
    """``then:`` of a task policy rule."""

    do: TaskAction = "continue"
    attempts: Annotated[int, Field(ge=1, le=MAX_RETRY_ATTEMPTS)] | NumberTemplate | None = Field(
        default=None, description="retry: total runs, first included")
    backoff: Backoff = "none"
    delay: Annotated[float, Field(ge=0, le=MAX_RETRY_DELAY_S)] | NumberTemplate = Field(
        default=0.0, description="retry: base delay in seconds")
    max_delay: Annotated[float, Field(ge=0, le=MAX_RETRY_DELAY_S)] | NumberTemplate | None = Field(
        default=None, description="retry: cap on one delay")
    to: str | None = Field(default=None, description="jump: a task label in this step, or 'previous'")


class PolicyRule(_Closed):
    """One rule; ``when=None`` marks the ``else`` fallback (always matches)."""

    when: str | None = None
    then: PolicyAction = Field(default_factory=PolicyAction)


class TaskPolicy(_Closed):
    rules: list[PolicyRule] = Field(default_factory=list)
    #: NoETL 5.x: what happens when no rule matches (docs/semantics.md "Task policies")
    on_unmatched: Literal["continue", "fail"] | None = None


class ResultSpec(_Closed):
    """``task.spec.result``: how large results travel (reference-first)."""

    inline_max_bytes: int | None = Field(default=None, ge=0)
    store: str | None = None
    select: dict[str, str] = Field(default_factory=dict)
    preview: bool | int | None = None
    #: NoETL 5.x ``output.preview_max_bytes``: the preview is the result's JSON cut to N bytes
    preview_max_bytes: int | None = Field(default=None, ge=0)
    #: paths a stored result keeps for templates besides those they name (``output_select``)
    keep: list[str] | None = None


class TaskSpec(_Open):
    policy: TaskPolicy | None = None
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description="seconds for one attempt")
    result: ResultSpec | None = None
    local: bool | None = Field(default=None, description="run tasks as Temporal local activities (fast path)")


class Task(Patches):
    """One labeled task of a step pipeline."""

    name: str
    kind: str
    spec: TaskSpec = Field(default_factory=TaskSpec)
    # Everything else the tool reads (code, url, method, cmd, input, args, ...).
    config: dict[str, Any] = Field(default_factory=dict)


# --------------------------------------------------------------------------- admission

class AdmitRule(_Closed):
    when: str | None = None  # None = else
    allow: bool = True


class AdmitPolicy(_Closed):
    mode: Literal["exclusive"] = "exclusive"
    rules: list[AdmitRule] = Field(default_factory=list)
    # What a denied token does (docs/semantics.md, "Entry, tokens, admission"): ``pending`` (default) waits for a ctx change
    # but does not hold the execution open; ``wait`` holds it open until admitted (an
    # approval gate); ``discard`` drops the token.
    on_deny: Literal["pending", "wait", "discard"] = "pending"


class FailurePolicy(_Closed):
    mode: Literal["best_effort", "fail_fast"] = "best_effort"


class Lifecycle(_Closed):
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)


class StepPolicy(_Closed):
    """``step.spec.policy``: admission, failure handling and the step's lifecycle; never task
    actions (``rules`` with ``do: retry`` ... are refused by normalize, NTL410)."""

    admit: AdmitPolicy | None = None
    failure: FailurePolicy | None = None
    #: Normalize moves ``policy.lifecycle`` to ``spec.lifecycle`` (where the engine reads it);
    #: the field stays so a definition stored before the move still loads, and replays as
    #: it ran (it was ignored then).
    lifecycle: Lifecycle | None = None


class StepSpec(_Open):
    policy: StepPolicy | None = None
    failure: FailurePolicy | None = None
    lifecycle: Lifecycle | None = None
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S,
                                  description="bound on the whole step run (s); see docs/semantics.md")
    local: bool | None = Field(default=None, description="run tasks as Temporal local activities (fast path)")


# --------------------------------------------------------------------------- loops

# Temporal allows 2,000 pending activities per workflow execution; half of it leaves
# room for the other steps' activities and for retries in progress.
MAX_IN_FLIGHT = 1000

#: a cursor loop's page size (``spec.frame.max_rows``): its default and its bound, so that one
#: page (a single activity result in workflow history) stays small (docs/semantics.md)
CURSOR_PAGE_ROWS = 100
MAX_CURSOR_PAGE_ROWS = 10_000


class LoopSpec(_Open):
    mode: Literal["sequential", "parallel", "cursor"] = "sequential"
    max_in_flight: Annotated[int, Field(ge=1)] | NumberTemplate | None = None
    frame: dict[str, Any] | None = Field(default=None, description="a cursor loop's page: `max_rows` (NoETL's "
                                                                  "other frame keys are accepted and not used)")
    local: bool | None = Field(default=None, description="run tasks as Temporal local activities (fast path)")


class Cursor(_Open):
    """``loop.cursor``: NoETL's claim-driven cursor loop (docs/semantics.md, "Cursor loops");
    the other keys (``auth``, ``database``, ...) are the SQL tool's own settings."""

    kind: Literal["postgres", "duckdb"]
    claim: str


class Loop(_Closed):
    in_: Any = Field(default=None, alias="in")
    cursor: Cursor | None = None
    iterator: str = "item"
    spec: LoopSpec = Field(default_factory=LoopSpec)


# --------------------------------------------------------------------------- routing

class RouterSpec(_Closed):
    mode: Literal["exclusive", "inclusive"] = "exclusive"
    # Extension seen in NoETL's engine: 'quiet' never counts as an error even when
    # executor.spec.no_next_is_error is set.
    on_no_match: Literal["terminate", "error", "quiet", "complete"] | None = None


class Arc(Patches):
    step: str
    when: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)


class Router(_Closed):
    spec: RouterSpec = Field(default_factory=RouterSpec)
    arcs: list[Arc] = Field(default_factory=list)


# --------------------------------------------------------------------------- steps

class Step(Patches):
    step: str
    desc: str | None = None
    spec: StepSpec = Field(default_factory=StepSpec)
    input: dict[str, Any] = Field(default_factory=dict)
    loop: Loop | None = None
    tool: list[Task]
    next: Router | None = None


# --------------------------------------------------------------------------- root

class ExecutorSpec(_Open):
    entry_step: str | None = None
    final_step: str | None = None
    no_next_is_error: bool = False
    failure: FailurePolicy | None = None
    # Guard against runaway task-policy jump cycles inside one pipeline run.
    max_jumps: int = Field(default=1000, ge=1)
    # Guard against runaway routing cycles (step runs per execution).
    max_step_runs: int = Field(default=10000, ge=1)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)
    policy: dict[str, Any] = Field(default_factory=dict)
    local: bool | None = Field(default=None, description="run tasks as Temporal local activities (fast path)")
    # A task template that renders an undefined value fails the task (``run --strict`` sets
    # it too); by default it renders empty, as in NoETL, with a warning in the task's events.
    strict_templates: bool = False


class ExecutorRequires(_Closed):
    """``executor.requires`` (NoETL 5.x): checked by validate (``dsl/requires.py``)."""

    tools: list[str] = Field(default_factory=list)
    features: list[str] = Field(default_factory=list)


class Executor(_Closed):
    profile: str | None = None
    version: str | None = None
    requires: ExecutorRequires | None = None
    spec: ExecutorSpec = Field(default_factory=ExecutorSpec)


class Metadata(_Open):
    name: str | None = None
    path: str | None = None
    version: str | int | float | None = None
    description: str | None = None


class KeychainEntry(_Open):
    name: str


class WorkbookTask(_Open):
    name: str
    tool: dict[str, Any] | None = None


class Playbook(_Closed):
    apiVersion: str = "noetl.io/v2"
    kind: Literal["Playbook"] = "Playbook"
    metadata: Metadata = Field(default_factory=Metadata)
    keychain: list[KeychainEntry] = Field(default_factory=list)
    executor: Executor = Field(default_factory=Executor)
    workload: dict[str, Any] = Field(default_factory=dict)
    workbook: list[WorkbookTask] = Field(default_factory=list)
    # Non-standard root ``spec:`` block seen in users' playbooks; exposed to templates
    # as ``spec`` (read-only), never interpreted by the runtime.
    spec: dict[str, Any] = Field(default_factory=dict)
    workflow: list[Step] = Field(min_length=1)

    _step_index: dict[str, Step] | None = PrivateAttr(default=None)

    def step_by_name(self) -> dict[str, Step]:
        """Steps by name; built once per model (the engine keeps its own index on ``StepGraph.steps``)."""
        if self._step_index is None:
            self._step_index = {s.step: s for s in self.workflow}
        return self._step_index


def playbook_definition(playbook: Playbook) -> dict[str, Any]:
    """The playbook as the workflow's JSON input: defaults left out (a 5,000-step chain is
    5x smaller, and its input is decoded inside a workflow activation)."""
    return playbook.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def playbook_from_definition(data: dict[str, Any]) -> Playbook:
    """Rebuild a validated playbook from its JSON definition (the workflow's input).

    The garbage collector is paused meanwhile: validating a 10,000-step definition makes
    hundreds of thousands of objects, and the collections they trigger in a worker's large
    heap cost several times the validation itself, inside one workflow activation.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return Playbook.model_validate(data)
    finally:
        if enabled:
            gc.enable()
