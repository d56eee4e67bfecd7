"""What the Temporal UI shows of a closed run is true (issue 40, "Honest details"): its
current details name how it ended, not a gate it waited at; nothing is pending after the
close; a cancel's reason and a failure's short headline are in the history. Read through the
Temporal client, as the UI reads them (the ``__temporal_workflow_metadata`` query,
``describe``, the history).
"""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.exceptions import ApplicationError

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import cancel
from noetl_temporal.conversion.converter import data_converter
from noetl_temporal.conversion.playbook_result import PLAYBOOK_FAILED
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from tests.cli.test_cli_control import cli

pytestmark = pytest.mark.temporal

GATED = """
metadata: {name: honest-gate}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: gated}]}
  - step: gated
    spec: {policy: {admit: {on_deny: wait, rules: [{when: "{{ ctx.approved }}", then: {allow: true}}]}}}
    tool: {kind: noop}
"""
SLEEPING = """
metadata: {name: honest-sleep}
workflow:
  - step: nap
    tool: {kind: shell, cmd: "sleep 30"}
"""
FAILING_BESIDE_A_SLEEPER = """
metadata: {name: honest-fail}
executor: {spec: {failure: {mode: fail_fast}}}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: nap}, {step: boom}]}
  - step: nap
    tool: {kind: shell, cmd: "sleep 30"}
  - step: boom
    tool: {kind: python, code: "import time; time.sleep(1); raise ValueError('the input was bad')"}
"""


async def _start(temporal, task_queue, text):
    playbook = load_playbook_text(textwrap.dedent(text)).playbook
    return await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)


async def _closed(handle):
    for _ in range(300):
        desc = await handle.describe()
        if desc.close_time is not None:
            return desc
        await asyncio.sleep(0.1)
    raise AssertionError("the run did not close")


async def _running_activity(handle):
    for _ in range(300):
        if (await handle.describe()).raw_description.pending_activities:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("no activity started")


async def _details(handle) -> str:
    return (await handle.query("__temporal_workflow_metadata")).current_details


async def test_a_closed_run_says_how_it_ended_not_where_it_waited(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await _start(temporal, task_queue, GATED)
        for _ in range(100):
            if "waiting at a gate" in await _details(handle):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the run never waited at its gate")
        await cancel(temporal.client, handle.id, reason="nobody approved it")
        await _closed(handle)
        text = await _details(handle)
    assert "waiting" not in text and "running:" not in text
    assert text.startswith("**CANCELLED**")
    assert "last step: `start`" in text and "nobody approved it" in text


@pytest.mark.parametrize("text,close", [(SLEEPING, "CANCELED"), (FAILING_BESIDE_A_SLEEPER, "FAILED")],
                         ids=["cancelled", "failed"])
async def test_nothing_is_pending_after_the_close(temporal, task_queue, text, close):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await _start(temporal, task_queue, text)
        await _running_activity(handle)
        if close == "CANCELED":
            await cancel(temporal.client, handle.id, reason="not needed")
        desc = await _closed(handle)
        assert desc.status.name == close
        assert list(desc.raw_description.pending_activities) == []


async def test_the_cli_cancel_reason_is_in_the_history_and_the_final_details(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await _start(temporal, task_queue, SLEEPING)
        await _running_activity(handle)
        code, _, err = await cli("cancel", handle.id, "--address", temporal.address, "--reason", "wrong input file")
        assert code == 0, err
        desc = await _closed(handle)
        history = await handle.fetch_history()
        details = await _details(handle)
    assert desc.status.name == "CANCELED"
    requested = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED]
    assert requested and requested[0].workflow_execution_cancel_requested_event_attributes.cause == "wrong input file"
    # the SDK closes a cancelled workflow without details: the run page's current details say why
    assert "reason: wrong input file" in details and "last step: `nap`" in details


async def test_a_failed_run_closes_with_a_short_headline_and_no_stack(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await _start(temporal, task_queue, FAILING_BESIDE_A_SLEEPER)
        await _closed(handle)
        history = await handle.fetch_history()
    failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED]
    failure = failed[0].workflow_execution_failed_event_attributes.failure
    assert "boom" in failure.message and "the input was bad" in failure.message
    assert failure.stack_trace == ""


def _raised(err: Exception) -> Exception:
    try:
        raise err
    except Exception as caught:
        return caught


def test_an_encoding_failure_converter_keeps_no_copy_of_the_stack():
    converter = data_converter(DataConverter(failure_converter_class=DefaultFailureConverterWithEncodedAttributes))
    ours, theirs = Failure(), Failure()
    converter.failure_converter.to_failure(_raised(ApplicationError("playbook ended FAILED: x", type=PLAYBOOK_FAILED)),
                                           converter.payload_converter, ours)
    converter.failure_converter.to_failure(_raised(ApplicationError("a user's", type="Theirs")),
                                           converter.payload_converter, theirs)
    [attributes] = converter.payload_converter.from_payloads([ours.encoded_attributes])
    assert attributes == {"message": "playbook ended FAILED: x", "stack_trace": ""}
    [attributes] = converter.payload_converter.from_payloads([theirs.encoded_attributes])
    assert "_raised" in attributes["stack_trace"]   # every other failure keeps its trace


HANDLED = """
metadata: {name: honest-handled}
workflow:
  - step: boom
    tool: {kind: python, code: "raise ValueError('the input was bad')"}
    next: {arcs: [{step: recover, when: "{{ event.name == 'step.failed' }}"}]}
  - step: recover
    tool: {kind: noop}
"""


async def test_a_failed_tool_attempt_is_named_although_its_activity_completed(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await _start(temporal, task_queue, HANDLED)
        desc = await _closed(handle)
        history = await handle.fetch_history()
        details = await _details(handle)
    assert desc.status.name == "COMPLETED"
    # the tool's error is the activity's result (a policy decides on it): Temporal shows it completed
    assert not [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    assert "failed: `boom` (" in details and "the input was bad" in details and "handled" in details
