"""``POST /executions/{id}/steps/{step}/retry-policy`` and ``.../retry-now`` on the dev
server: more attempts and a shorter delay take effect on a task waiting out a one-hour
backoff, across a worker restart; a control that does not apply is refused with the reason
(docs/approvals.md, "Retrying a step now, changing its retry policy")."""

from __future__ import annotations

import contextlib

import pytest

from noetl_temporal.hosting.worker import build_worker

from ..client.test_step_retry import backing_off
from .conftest import app_client, events_of, make_settings, playbook, wait_for, wait_state

pytestmark = pytest.mark.temporal

# fetch succeeds at its 4th attempt, but its policy allows 2, an hour apart
FLAKY = playbook("""
    metadata: {name: flaky}
    workflow:
      - step: fetch
        tool:
          kind: shell
          cmd: "echo x >> {{ workload.mark }}; [ $(wc -l < {{ workload.mark }}) -ge 4 ] || exit 3"
          spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 2, delay: 3600}}]}}
""")


async def test_a_policy_change_takes_effect_and_survives_a_worker_restart(temporal, task_queue, catalog,
                                                                         event_store, tmp_path):
    mark = tmp_path / "attempts"
    settings = make_settings(temporal, task_queue, catalog, event_store, execution_timeout_s=7200)
    async with app_client(settings) as http:
        async with build_worker(temporal.client, task_queue=task_queue, event_store=event_store):
            r = await http.post("/executions", json={"playbook": FLAKY, "payload": {"mark": str(mark)}})
            assert r.status_code == 202, r.text
            execution_id = r.json()["execution_id"]
            try:
                await backing_off(temporal.client, execution_id)   # attempt 1 failed: an hour to wait
                refused = await http.post(f"/executions/{execution_id}/steps/fetch/retry-policy",
                                          json={"reason": "no change"})
                assert refused.status_code == 422 and "sets attempts, delay or both" in refused.text, refused.text
                refused = await http.post(f"/executions/{execution_id}/steps/nope/retry-now", json={})
                assert refused.status_code == 422 and "the playbook has no step 'nope'" in refused.text
                r = await http.post(f"/executions/{execution_id}/steps/fetch/retry-policy",
                                    json={"attempts": 4, "delay": 1, "reason": "flaky source, retry faster"})
                assert r.status_code == 200, r.text
                assert r.json()["attempts"] == 4 and r.json()["delay"] == 1 and r.json()["by"] == "api"
            except BaseException:
                await temporal.client.get_workflow_handle(execution_id).terminate("test failed")
                raise
        # the worker that took the change is gone: a new one makes the attempts it allows
        async with build_worker(temporal.client, task_queue=task_queue, event_store=event_store):
            status = await wait_state(http, execution_id)
        assert status["state"] == "COMPLETED", status
        assert mark.read_text().count("x") == 4
        [changed] = await events_of(http, execution_id, type="step.retry.policy")
        assert changed["entity_id"] == "fetch" and changed["payload"]["by"] == "api"
        assert changed["payload"]["attempts"] == 4 and changed["payload"]["delay"] == 1
        assert changed["payload"]["reason"] == "flaky source, retry faster"
        refused = await http.post(f"/executions/{execution_id}/steps/fetch/retry-now", json={})
        assert refused.status_code == 409, refused.text


# the fast path: the workflow drives the retries on its own timer, which the update steers
LOCAL = playbook("""
    metadata: {name: local-retries}
    workflow:
      - step: fetch
        tool:
          kind: shell
          cmd: "echo x >> {{ workload.mark }}; exit 3"
          spec:
            local: true
            policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 2, delay: 3600}}]}
""")


async def test_the_fast_path_takes_more_attempts_and_retries_now(temporal, task_queue, catalog, event_store,
                                                                 tmp_path):
    """Its policy allows 2 attempts an hour apart: the operator allows 3, and makes each now."""
    mark = tmp_path / "attempts"
    settings = make_settings(temporal, task_queue, catalog, event_store, execution_timeout_s=7200)
    async with app_client(settings) as http, \
            build_worker(temporal.client, task_queue=task_queue, event_store=event_store):
        r = await http.post("/executions", json={"playbook": LOCAL, "payload": {"mark": str(mark)}})
        execution_id = r.json()["execution_id"]
        try:
            async def changed() -> dict | None:   # accepted once the step runs (its attempt 1)
                r = await http.post(f"/executions/{execution_id}/steps/fetch/retry-policy",
                                    json={"attempts": 3, "reason": "one more today"})
                assert r.status_code in (200, 422), r.text
                return r.json() if r.status_code == 200 else None

            policy = await wait_for(changed, what="the step to run")
            # attempt 1 runs, or its hour of backoff began (a shell exit is quick)
            assert policy["fast_path"] is True and policy["attempts"] == 3 and policy["attempt"] in (1, 2)
            for attempt in (2, 3):   # each waits an hour (the rule's delay), cut short
                async def now() -> dict | None:
                    r = await http.post(f"/executions/{execution_id}/steps/fetch/retry-now",
                                        json={"reason": "the source is back"})
                    assert r.status_code in (200, 422), r.text
                    assert r.status_code == 200 or "is not waiting to retry: its task is running" in r.text, r.text
                    return r.json() if r.status_code == 200 else None

                assert (await wait_for(now, what=f"attempt {attempt}'s backoff"))["attempt"] == attempt
                if attempt == 3:
                    break   # the last: the execution ends
                refused = await http.post(f"/executions/{execution_id}/steps/fetch/retry-policy",
                                          json={"attempts": 1})
                assert refused.status_code == 422, refused.text   # it runs, or already waits for the next
                assert any(f"is at attempt {n} already" in refused.text for n in (attempt, attempt + 1)), refused.text
            status = await wait_state(http, execution_id)
            assert status["state"] == "FAILED", status   # the operator's 3 attempts used up, seconds not hours
            assert mark.read_text().count("x") == 3
            assert [e["payload"]["attempts"] for e in await events_of(http, execution_id, type="step.retry.policy")] \
                == [3]
            assert len(await events_of(http, execution_id, type="step.retry.now")) == 2
        finally:
            with contextlib.suppress(Exception):
                await temporal.client.get_workflow_handle(execution_id).terminate("test over")
