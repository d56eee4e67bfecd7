"""A playbook calls a user's own Temporal code (``kind: activity``, ``kind: workflow``): an
activity and a workflow registered on a worker of the user's, on another task queue, run
from a playbook on the dev server; results reach the next step's templates, failures the
task's policy, the retry rules become Temporal retries, and a cancel reaches them."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import cancel
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker

from ..conftest import REPO

pytestmark = pytest.mark.temporal

CALLS: Counter[str] = Counter()   # the user's activities count their calls here
STARTED: list[str] = []
CANCELLED: list[str] = []


@activity.defn(name="charge_card")
async def charge_card(amount: int, currency: str) -> dict[str, Any]:
    CALLS["charge_card"] += 1
    return {"charged": amount, "currency": currency}


@activity.defn(name="reject_order")
async def reject_order(order: dict[str, Any]) -> None:
    CALLS["reject_order"] += 1
    raise ApplicationError(f"order {order['id']} refused", type="Bad", non_retryable=True)


@activity.defn(name="flaky")
async def flaky(key: str) -> dict[str, Any]:
    CALLS[key] += 1
    attempt = activity.info().attempt
    if attempt < 3:
        raise ApplicationError(f"not yet (attempt {attempt})", type="Flaky")
    return {"attempt": attempt}


@activity.defn(name="wait_forever")
async def wait_forever(key: str) -> None:
    STARTED.append(key)
    try:
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.2)
    except asyncio.CancelledError:
        CANCELLED.append(key)
        raise


@workflow.defn(name="Greet", sandboxed=False)   # defined in a test module: nothing to sandbox
class Greet:
    @workflow.run
    async def run(self, request: dict[str, Any]) -> str:
        return f"hello {request['who']}, charged {request['charged']}"


@workflow.defn(name="Refuse", sandboxed=False)
class Refuse:
    @workflow.run
    async def run(self, who: str) -> str:
        raise ApplicationError(f"no greeting for {who}", type="NoGreeting", non_retryable=True)


@pytest_asyncio.fixture
async def user_queue(temporal) -> AsyncIterator[str]:
    """The user's own worker, on a task queue of its own (not the playbook's)."""
    queue = f"user-{uuid.uuid4().hex[:10]}"
    async with Worker(temporal.client, task_queue=queue, activities=[charge_card, reject_order, flaky, wait_forever],
                      workflows=[Greet, Refuse]):
        yield queue


async def test_a_users_activity_and_workflow_feed_the_next_steps(run_yaml, user_queue):
    report = await run_yaml("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: user-calls}
        workload: {who: ada}
        workflow:
          - step: charge
            tool:
              kind: activity
              name: charge_card
              task_queue: "{{ workload.queue }}"
              args: [42, EUR]
            next: {arcs: [{step: greet}]}
          - step: greet
            spec: {workflow: {task_queue: "QUEUE"}}   # a `spec.<kind>:` default, as for any kind
            tool:
              kind: workflow
              name: Greet
              args: {who: "{{ workload.who }}", charged: "{{ charge.charged }} {{ charge.currency }}"}
            next: {arcs: [{step: done}]}
          - step: done
            tool: {kind: noop, result: "{{ greet }}!"}
        """.replace("QUEUE", user_queue), payload={"queue": user_queue})
    assert report.state == "COMPLETED", report.error
    assert report.steps["charge"]["result"] == {"charged": 42, "currency": "EUR"}
    assert report.steps["done"]["result"] == "hello ada, charged 42 EUR!"


async def test_a_users_non_retryable_failure_reaches_the_policy(run_yaml, user_queue):
    before = CALLS["reject_order"]
    report = await run_yaml("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: user-failure}
        workflow:
          - step: order
            tool:
              kind: activity
              name: reject_order
              task_queue: "{{ workload.queue }}"
              args: [{id: 7}]
              spec:
                policy:
                  rules:
                    - when: "{{ output.error.retryable }}"
                      then: {do: retry, attempts: 5, delay: 0.1}
                    - when: "{{ output.error.type == 'Bad' and output.error.non_retryable }}"
                      then:
                        do: continue
                        set_ctx: {why: "{{ output.error.message }}", kind: "{{ output.error.kind }}"}
        """, payload={"queue": user_queue})
    assert report.state == "COMPLETED", report.error
    assert report.ctx["why"] == "order 7 refused"
    assert report.ctx["kind"] == "Bad"
    assert CALLS["reject_order"] - before == 1   # non-retryable: Temporal never retried it


FLAKY = """
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {{name: user-retries}}
    workflow:
      - step: call
        tool:
          kind: activity
          name: flaky
          task_queue: "{{{{ workload.queue }}}}"
          args: ["{{{{ workload.key }}}}"]
          {policy}
    """


async def test_the_retry_rules_become_temporal_retries(run_yaml, user_queue, temporal):
    key = uuid.uuid4().hex
    policy = ("spec: {policy: {rules: [{when: \"{{ output.status == 'error' }}\", "
              "then: {do: retry, attempts: 3, delay: 0.2}}]}}")
    report = await run_yaml(FLAKY.format(policy=policy), payload={"queue": user_queue, "key": key})
    assert report.state == "COMPLETED", report.error
    assert report.steps["call"]["result"] == {"attempt": 3}
    assert CALLS[key] == 3
    history = await temporal.client.get_workflow_handle(report.workflow_id).fetch_history()
    started = [e.activity_task_started_event_attributes.attempt for e in history.events
               if e.HasField("activity_task_started_event_attributes")]
    assert 3 in started   # Temporal's own attempt count: the retries were Temporal's


async def test_without_a_retry_rule_one_failure_fails_the_step(run_yaml, user_queue):
    key = uuid.uuid4().hex
    report = await run_yaml(FLAKY.format(policy=""), payload={"queue": user_queue, "key": key})
    assert report.state == "FAILED"
    assert CALLS[key] == 1
    assert report.error == "step 'call' failed: not yet (attempt 1)"
    [failed] = [e for e in report.events if e["event_type"] == "task.failed"]
    error = failed["payload"]["outcome"]["error"]
    assert (error["kind"], error["type"], error["retryable"], error["non_retryable"]) == ("Flaky", "Flaky", True, False)


async def test_a_cancel_reaches_the_users_activity(temporal, task_queue, user_queue):
    key = uuid.uuid4().hex
    loaded = load_playbook_text(f"""
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: user-cancel}}
workflow:
  - step: wait
    tool: {{kind: activity, name: wait_forever, task_queue: {user_queue}, args: [{key}], heartbeat_timeout: 2}}
""", source="<test>")
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, loaded.playbook, task_queue=task_queue,
                                       execution_timeout_s=60)
        await _until(lambda: key in STARTED)
        await cancel(temporal.client, handle.id, reason="enough waiting")
        await _until_closed(handle)
        assert key in CANCELLED   # the user's activity saw the cancel, before the run closed
        description = await handle.describe()
        assert description.status == WorkflowExecutionStatus.CANCELED
        assert list(description.raw_description.pending_activities) == []   # nothing left pending
        # The run waited for the acknowledgement (WAIT_CANCELLATION_COMPLETED): the activity's
        # cancellation is in history before the close.
        kinds = [e.event_type for e in (await handle.fetch_history()).events]
        assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED in kinds
        assert kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED) < \
            kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED)


async def _until(condition: Any, seconds: float = 20.0) -> None:
    for _ in range(int(seconds * 10)):
        if condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached in time")


async def _until_closed(handle: Any) -> None:
    for _ in range(200):
        if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
            return
        await asyncio.sleep(0.1)


async def test_a_step_timeout_cancels_the_users_activity(run_yaml, user_queue):
    key = uuid.uuid4().hex
    report = await run_yaml(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: user-timeout}}
        workflow:
          - step: wait
            spec: {{timeout: 1}}
            tool: {{kind: activity, name: wait_forever, task_queue: {user_queue}, args: [{key}], heartbeat_timeout: 2}}
        """)
    assert report.state == "FAILED"
    assert "ran longer than its spec.timeout of 1 s; its tasks were cancelled" in (report.error or ""), report.error
    await _until(lambda: key in CANCELLED)


async def test_an_unregistered_type_fails_the_task_with_the_sdks_message(run_yaml, user_queue):
    report = await run_yaml(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: user-typo}}
        workflow:
          - step: call
            tool: {{kind: activity, name: chrage_card, task_queue: {user_queue}}}
        """)
    assert report.state == "FAILED"
    assert "Activity function chrage_card" in (report.error or "") and "is not registered on this worker, available activities: charge_card" in (report.error or ""), report.error


async def test_the_playbook_of_deployment_md_runs_as_the_page_says(run_yaml, user_queue):
    """docs/deployment.md "A playbook orchestrating your own activities": its playbook, on
    this test's worker (the page's queue `billing` is this test's queue)."""
    page = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = page[page.index("### A playbook orchestrating your own activities"):]
    text = section[section.index("```yaml\n") + 8:section.index("\n```", section.index("```yaml\n"))]
    report = await run_yaml(text.replace("task_queue: billing", f"task_queue: {user_queue}"))
    assert report.state == "COMPLETED", report.error
    assert report.steps["charge"]["result"] == {"charged": 42, "currency": "EUR"}
    assert report.steps["done"]["result"] == "hello ada, charged 42 EUR!"
    assert report.ctx["why"] == "order 7 refused"


async def test_a_users_workflow_failure_reaches_the_arcs(run_yaml, user_queue):
    report = await run_yaml(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: user-child-failure}}
        workflow:
          - step: greet
            tool: {{kind: workflow, name: Refuse, task_queue: {user_queue}, args: [bob]}}
            next:
              arcs:
                - {{step: sorry, when: "{{{{ event.error.kind == 'NoGreeting' }}}}",
                   args: {{why: "{{{{ event.error.message }}}}"}}}}
          - step: sorry
            tool: {{kind: noop, result: "{{{{ args.why }}}}"}}
        """)
    assert report.steps["sorry"]["result"] == "no greeting for bob", report.error
