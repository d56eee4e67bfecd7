"""Request and response models: the API's contract, published as its OpenAPI document.

Why explicit models everywhere: the OpenAPI document is what clients (and the
property-based test) rely on, so every response, errors included, has a schema. Request
models forbid unknown fields, so a typo is a 422 that names it instead of being ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from noetl_temporal.store.catalog import MAX_PATH_CHARS, PATH_PATTERN

State = Literal["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"]
STATES: tuple[State, ...] = get_args(State)


def as_state(value: str) -> State:
    """``value`` as a :data:`State` (the type checker cannot narrow a ``str`` by itself);
    ValueError for a name the execution layer never produces."""
    for state in STATES:
        if state == value:
            return state
    raise ValueError(f"not an execution state: {value!r}")

#: the largest playbook text accepted inline or into the catalog (characters)
MAX_PLAYBOOK_CHARS = 512 * 1024
MAX_INT = 2**31 - 1


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------ errors


class Diagnostic(BaseModel):
    """One located validation problem, exactly as ``noetl-temporal validate --json`` prints it."""

    code: str
    severity: Literal["error", "warning"]
    message: str
    path: str = ""
    line: int | None = None
    col: int | None = None
    file: str | None = None
    fix: str | None = None


class ErrorBody(BaseModel):
    """Every error response: ``detail`` always; ``errors`` for invalid playbooks, ``state`` for 409."""

    detail: Any = Field(description="what went wrong (a list of field errors for malformed requests)")
    errors: list[Diagnostic] | None = None
    warnings: list[Diagnostic] | None = None
    state: State | None = Field(default=None, description="the execution's state, when it already finished")


# ------------------------------------------------------------------ executions


class StartInline(_Request):
    """Start from playbook YAML sent with the request."""

    playbook: str = Field(max_length=MAX_PLAYBOOK_CHARS, description="playbook YAML text")
    payload: dict[str, Any] = Field(default_factory=dict,
                                    description="request payload, deep-merged over the playbook's workload")


class StartFromCatalog(_Request):
    """Start a registered playbook: the latest version, or ``version``."""

    path: str = Field(pattern=PATH_PATTERN, max_length=MAX_PATH_CHARS, description="catalog path of a registered playbook")
    version: int | None = Field(default=None, ge=1, le=MAX_INT, description="catalog version (default: latest)")
    payload: dict[str, Any] = Field(default_factory=dict,
                                    description="request payload, deep-merged over the playbook's workload")


#: the body of POST /executions: exactly one of the two shapes (unknown fields are refused)
StartExecution = StartInline | StartFromCatalog


def _event_type_names() -> tuple[str, ...]:
    """Every name an event filter accepts: canonical types, ``prefix.*`` and legacy names."""
    from noetl_temporal.engine.event_types import EVENT_TYPES as CANONICAL_EVENT_TYPES
    from noetl_temporal.engine.event_types import LEGACY_EVENT_NAMES

    prefixes = {".".join(t.split(".")[:i]) + ".*" for t in CANONICAL_EVENT_TYPES for i in range(1, t.count(".") + 1)}
    return tuple(sorted(set(CANONICAL_EVENT_TYPES) | prefixes | set(LEGACY_EVENT_NAMES)))


if TYPE_CHECKING:
    EventTypeName = str  # the names are known only at run time; the schema lists them all
else:
    EventTypeName = Literal[_event_type_names()]


class Links(BaseModel):
    status: str
    events: str
    stream: str
    view: str = Field(description="a web page drawing the playbook, its steps marked live")


class StartResponse(BaseModel):
    execution_id: str
    state: State
    playbook_path: str | None = None
    catalog_version: int | None = None
    links: Links


class ExecutionSummary(BaseModel):
    execution_id: str
    state: State
    temporal_status: str
    playbook_path: str | None = None
    playbook_name: str | None = None
    playbook_version: str | None = Field(default=None, description="metadata.version, else the catalog version")
    playbook_sha256: str | None = Field(default=None, description="hash of the definition it runs (pinned at start)")
    started_at: str | None = None
    ended_at: str | None = None


class ExecutionList(BaseModel):
    items: list[ExecutionSummary]
    next_page_token: str | None = Field(default=None, description="pass as page_token for the next page")


class PlaybookRef(BaseModel):
    path: str | None = None
    name: str | None = None
    source: str | None = Field(default=None, description="'inline', or 'catalog:<path>@<version>'")
    catalog_version: int | None = None
    version: str | None = Field(default=None, description="metadata.version, else the catalog version")
    sha256: str | None = Field(default=None, description="SHA-256 of the normalized definition this execution runs: "
                                                         "the one it started with, carried in its input (pinned)")


class TemporalRef(BaseModel):
    workflow_id: str
    run_id: str | None = None
    status: str
    task_queue: str | None = None


class ExecutionDetail(BaseModel):
    """Summary, steps and timing. Variables (ctx, workload) are in ``/variables``."""

    execution_id: str
    state: State
    paused: bool = False
    current_step: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    terminal_event: str | None = None
    summary: dict[str, Any] | None = Field(default=None, description="final summary (total/failed steps, reason)")
    steps: dict[str, Any] = Field(default_factory=dict)
    event_count: int | None = None
    playbook: PlaybookRef
    temporal: TemporalRef
    workers_polling: int | None = Field(
        default=None, description="workers polling the task queue of an open execution (0: it makes no progress "
                                  "until one runs); null once closed")


class Status(BaseModel):
    """Exactly the minimal status model of the status contract (docs/status.md); never variables."""

    model_config = ConfigDict(extra="forbid")

    execution_id: str
    state: State
    current_step: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    terminal_event: str | None = None
    completion_inferred: bool = False
    workers_polling: int | None = Field(
        default=None, description="workers polling the task queue of an open execution (0: it makes no progress "
                                  "until one runs); null once closed")
    waiting: list[dict[str, Any]] | None = Field(
        default=None, description="only while `kind: approve` tasks wait for an answer: each one's step, prompt, "
                                  "fields, approvers, timeout and since when (docs/approvals.md)")
    paused_steps: list[str] | None = Field(
        default=None, description="only while an operator has paused steps: their names (docs/approvals.md)")
    retrying: list[dict[str, Any]] | None = Field(
        default=None, description="only while fast-path tasks (`spec.local`) wait to retry: each one's step, "
                                  "iteration, attempt (the one it waits for), until (when it starts) and "
                                  "last_error (docs/approvals.md)")


class Event(BaseModel):
    """A canonical event envelope (docs/events.md, "Envelope"); further envelope fields pass through."""

    model_config = ConfigDict(extra="allow")

    event_id: str
    event_type: str
    seq: int
    timestamp: str
    execution_id: str
    entity_type: str | None = None
    entity_id: str | None = None
    status: str | None = None
    payload: dict[str, Any] | None = None


class EventPage(BaseModel):
    execution_id: str
    events: list[Event]
    next_after_seq: int | None = Field(default=None, description="pass as after_seq for the next page; null at the end")


class Variables(BaseModel):
    """The debug view of an execution's variables, secrets redacted (``***``)."""

    execution_id: str
    workload: dict[str, Any]
    ctx: dict[str, Any]
    redacted: list[str] = Field(description="paths of the values that were hidden")


class CancelRequest(_Request):
    reason: str | None = Field(default=None, max_length=2000)
    cascade: bool = Field(default=True, description="also cancel running sub-playbooks (child workflows); "
                                            "false leaves them running on their own")


class CancelResponse(BaseModel):
    execution_id: str
    state: State = Field(description="CANCELLED once it ended (within the API's wait), else RUNNING")
    cancel_requested: bool = True


class PauseRequest(_Request):
    reason: str | None = Field(default=None, max_length=2000)


class ControlResponse(BaseModel):
    execution_id: str
    state: State
    paused: bool


class RedriveRequest(_Request):
    from_step: str | None = Field(default=None, max_length=255,
                                  description="rerun from this step (and what follows it) even if it completed")
    latest: bool = Field(default=False, description="run the playbook file the execution was started from as "
                                                    "it is now, not the definition it started with")
    playbook: str | None = Field(default=None, description="a newer playbook (YAML text) to run instead; a step "
                                                           "whose definition changed reruns")


class RedriveResponse(BaseModel):
    execution_id: str = Field(description="the new execution")
    redriven_from: str
    from_step: str | None = None
    definition: str = Field(description="original, latest or file (the request's playbook)")
    reused_steps: list[str] = Field(description="steps whose recorded results the new execution reuses")
    rerun_steps: list[str] = Field(description="every other step: it runs if the new execution reaches it")
    changed_steps: list[str] = Field(description="completed steps not reused because their definition changed")
    redriven_children: dict[str, str] = Field(
        default_factory=dict, description="sub-playbook steps whose failed child is redriven inside this "
                                          "redrive: step (`step[i]` for a loop's iteration) -> the old child's execution id")
    old_stream_noted: bool = Field(description="execution.redriven was appended to the old execution's events")


class CtxPatch(_Request):
    patch: dict[str, Any] = Field(min_length=1, description="ctx keys to set ('a.b' sets a nested key)")


class AnswerRequest(_Request):
    values: dict[str, Any] = Field(default_factory=dict, description="the answer: field -> value, as the "
                                                                     "task's `fields` declare them")
    iteration: int | None = Field(default=None, description="the loop iteration, when several wait")
    reason: str | None = Field(default=None, max_length=2000, description="why (recorded in approval.answered)")


class AnswerResponse(BaseModel):
    execution_id: str
    step: str
    task_run_id: str
    answer: dict[str, Any]
    by: str | None = Field(description="who answered: an approver token's name, or `api`")


class SkipRequest(_Request):
    reason: str = Field(min_length=1, max_length=2000, description="why (recorded in step.skipped)")
    result: Any = Field(default=None, description="the step's result instead of its task's")
    iteration: int | None = Field(default=None, description="the loop iteration to skip (loop steps)")


class SkipResponse(BaseModel):
    execution_id: str
    step: str
    result: Any = None
    by: str | None = None
    reason: str


class StepHoldRequest(_Request):
    reason: str | None = Field(default=None, max_length=2000, description="why (recorded in the event)")


class StepHoldResponse(BaseModel):
    execution_id: str
    step: str
    paused: bool
    paused_steps: list[str]


class StepControlOffer(BaseModel):
    """The controls one running or paused step (a loop step: one running iteration) takes now."""

    step: str
    iteration: int | None = None
    paused: bool = False
    controls: list[str] = Field(default_factory=list, description="those its update validators would accept now, "
                                "of skip, retry-now, retry-policy, pause, resume (each a route under steps/{step}/)")
    retrying: dict[str, Any] | None = Field(
        default=None, description="a fast-path task waiting to retry: attempt (the one it waits for), until "
                                  "(when it starts), last_error")


class StepControls(BaseModel):
    """``GET /executions/{id}/steps/controls``: what the execution page offers (docs/approvals.md)."""

    execution_id: str
    state: str
    answered: bool = Field(description="false: no worker answered in time (`steps` is then empty; ask again)")
    steps: list[StepControlOffer] = Field(default_factory=list)


class RetryNowRequest(_Request):
    reason: str | None = Field(default=None, max_length=2000, description="why (recorded in step.retry.now)")
    iteration: int | None = Field(default=None, description="the loop iteration (loop steps)")


class RetryPolicyRequest(RetryNowRequest):
    attempts: int | None = Field(default=None, ge=1, description="attempts in all (default: keep Temporal's cap)")
    delay: float | None = Field(default=None, ge=0, description="seconds between attempts (default: keep the current)")


class RetryResponse(BaseModel):
    execution_id: str
    step: str
    action: str
    task_run_id: str
    by: str | None = None
    reason: str | None = None
    attempts: int | None = None
    delay: float | None = None
    attempt: int | None = Field(default=None, description="the attempt a retry-now started (or the next one)")
    fast_path: bool = Field(default=False, description="the task runs on the fast path (`spec.local`): the "
                                                       "workflow's own retry loop took the control")


class CtxResponse(BaseModel):
    execution_id: str
    ctx: dict[str, Any] = Field(description="the ctx after the patch, secrets redacted")
    redacted: list[str]


# ------------------------------------------------------------------ catalog


class RegisterPlaybook(_Request):
    content: str = Field(min_length=1, max_length=MAX_PLAYBOOK_CHARS, description="playbook YAML text")


class Registered(BaseModel):
    path: str
    version: int
    created: bool = Field(description="false when the content equals the latest version")
    sha256: str
    created_at: str


class CatalogItem(BaseModel):
    path: str
    latest_version: int
    versions: int
    updated_at: str


class CatalogList(BaseModel):
    items: list[CatalogItem]


class CatalogPlaybook(BaseModel):
    path: str
    version: int
    content: str
    sha256: str
    created_at: str


# ------------------------------------------------------------------ health


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready", "unavailable"]
    temporal: str | None = None
    namespace: str | None = None
    catalog: str | None = None
    detail: str | None = None


# ------------------------------------------------------------------ schedules

#: ``temporal.schedules.OVERLAP_POLICIES``' keys (tests/api/test_api_schedules.py holds them equal)
Overlap = Literal["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"]
#: a schedule name: its Temporal schedule id and a URL path segment
SCHEDULE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
_DURATION_DOC = "a duration: seconds as a number, or text such as 30s, 500ms, 10m, 2h, 1d, 1h30m"


class _ScheduleTimes(_Request):
    name: str = Field(pattern=SCHEDULE_NAME_PATTERN, description="schedule name (its Temporal schedule id; each "
                                                                  "run's execution id is <name>-<scheduled time>)")
    cron: list[str] = Field(default_factory=list, max_length=20,
                            description="cron expressions (five fields, or @hourly, @daily ...)")
    every: str | float | None = Field(default=None, description=f"interval between runs: {_DURATION_DOC}")
    overlap: Overlap = Field(default="skip", description="when a run is due while the last one still runs")
    catchup_window: str | float | None = Field(
        default=None, description=f"runs missed while Temporal was down start if at most this late: {_DURATION_DOC}")
    jitter: str | float | None = Field(default=None, description=f"start each run up to this much later: {_DURATION_DOC}")
    time_zone: str | None = Field(default=None, max_length=100, description="time zone of the cron expressions")
    paused: bool = False
    note: str | None = Field(default=None, max_length=1000)
    payload: dict[str, Any] = Field(default_factory=dict,
                                    description="payload of every run, deep-merged over the playbook's workload")


class ScheduleInline(_ScheduleTimes):
    """Schedule playbook YAML sent with the request (validated now; pinned to the schedule)."""

    playbook: str = Field(max_length=MAX_PLAYBOOK_CHARS, description="playbook YAML text")


class ScheduleFromCatalog(_ScheduleTimes):
    """Schedule a registered playbook: the latest version, or ``version`` (pinned to the schedule)."""

    path: str = Field(pattern=PATH_PATTERN, max_length=MAX_PATH_CHARS, description="catalog path of a registered playbook")
    version: int | None = Field(default=None, ge=1, le=MAX_INT, description="catalog version (default: latest)")


#: the body of POST /schedules: exactly one of the two shapes (unknown fields are refused)
CreateSchedule = ScheduleInline | ScheduleFromCatalog


class ScheduleRun(BaseModel):
    execution_id: str | None = None
    scheduled_at: str | None = None
    started_at: str | None = None


class ScheduleSummary(BaseModel):
    name: str
    playbook_name: str | None = None
    playbook_path: str | None = None
    playbook_version: str | None = None
    cron: list[str] = Field(default_factory=list)
    every_s: list[float] = Field(default_factory=list)
    jitter_s: float | None = None
    time_zone: str | None = None
    paused: bool = False
    note: str | None = None
    recent: list[str | None] = Field(default_factory=list, description="scheduled times of the latest runs")
    next: list[str | None] = Field(default_factory=list, description="the next scheduled times")


class ScheduleList(BaseModel):
    items: list[ScheduleSummary]


class ScheduleDetail(BaseModel):
    """A schedule: what it runs (pinned when it was created), when, its policies and runs."""

    name: str
    playbook_name: str | None = None
    playbook_path: str | None = None
    playbook_version: str | None = Field(default=None, description="metadata.version, else the catalog version")
    playbook_sha256: str | None = Field(default=None, description="hash of the normalized definition every run gets")
    source: str | None = None
    payload: dict[str, Any] | None = None
    task_queue: str | None = None
    cron: list[str] = Field(default_factory=list)
    every_s: list[float] = Field(default_factory=list)
    jitter_s: float | None = None
    time_zone: str | None = None
    overlap: str
    catchup_window_s: float | None = None
    paused: bool = False
    note: str | None = None
    actions: int = Field(default=0, description="runs started so far")
    skipped_overlap: int = 0
    missed_catchup_window: int = 0
    running: list[str] = Field(default_factory=list, description="execution ids of its runs still running")
    recent: list[ScheduleRun] = Field(default_factory=list)
    next: list[str | None] = Field(default_factory=list)
    created_at: str | None = None


class ScheduleNote(_Request):
    note: str | None = Field(default=None, max_length=1000, description="why (shown with the schedule)")


class TriggerSchedule(_Request):
    overlap: Overlap | None = Field(default=None, description="overlap policy of this run (default: the schedule's)")


class BackfillSchedule(_Request):
    start: str = Field(description="RFC 3339 date-time, e.g. 2026-01-31T00:00:00Z (no offset means UTC)")
    end: str = Field(description="RFC 3339 date-time after start")
    overlap: Overlap = Field(default="allow_all",
                             description="overlap policy of the backfilled runs (they start together)")


class ScheduleAccepted(BaseModel):
    name: str
    accepted: bool = True
    runs: str = Field(description="where the schedule's runs are listed")
