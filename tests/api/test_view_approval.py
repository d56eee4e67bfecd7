"""The execution page's answer form (docs/approvals.md) in headless Chromium, on a real run:
the form shows what is asked, a refusal of the workflow's validator appears as written,
and an accepted answer routes the run."""

from __future__ import annotations

import os
import time
import uuid

import httpx
import pytest

from noetl_temporal.store.catalog import Catalog
from tests.support.webdriver import Browser

from .conftest import playbook
from .live import LiveServer

pytestmark = pytest.mark.temporal

ASKED = playbook("""
    metadata: {name: asked}
    workflow:
      - step: sign_off
        tool:
          kind: approve
          prompt: "Ship it?"
          fields:   # a list: shown in this order
            - {name: approved, type: boolean, required: true}
            - {name: env, type: string, choices: [staging, prod]}
            - {name: comment, type: string, required: true}
          approvers: [api]
        next: {arcs: [{step: ship, when: "{{ sign_off.approved }}"}, {step: hold}]}
      - step: ship
        tool: {kind: noop, result: "{{ sign_off.env }}: {{ sign_off.comment }}"}
      - step: hold
        tool: {kind: noop}
""")

FORM_JS = """
const f = document.querySelector('form.approval');
if (!f) return null;
return {step: f.dataset.step, answer: f.dataset.answer || null,
        status: f.querySelector('.answer-status').textContent,
        prompt: f.querySelector('.prompt').textContent,
        fields: Array.from(f.querySelectorAll('[data-type]')).map(i => [i.name, i.tagName, i.dataset.type])};
"""


@pytest.fixture(scope="module")
def live(temporal, tmp_path_factory, event_store):
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("asked") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-asked-{uuid.uuid4().hex[:8]}",
                    event_store=event_store, execution_timeout_s=60, heartbeat_timeout_s=2) as server:
        yield server


def test_an_approval_is_answered_in_the_page(live):
    reason = Browser.skip_reason()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        r = http.post("/executions", json={"playbook": ASKED})
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        for _ in range(200):   # the page draws the forms of what waits when it is served
            if http.get(f"/executions/{execution_id}/status").json().get("waiting"):
                break
            time.sleep(0.1)
        browser.open(f"{live.url}/executions/{execution_id}/view")
        form = browser.wait_js(FORM_JS, timeout=30, what="the answer form")
        assert form["step"] == "sign_off" and form["prompt"] == "sign_off: Ship it?"
        assert form["fields"] == [["approved", "SELECT", "boolean"], ["env", "SELECT", "string"],
                                  ["comment", "INPUT", "string"], ["__reason", "INPUT", "reason"]]

        # the browser sends what the form holds; the workflow's validator refuses it, as written
        browser.js("const f = document.querySelector('form.approval');"
                   "f.querySelector('[name=approved]').value = 'true';"
                   "f.querySelector('[name=env]').value = 'prod';"
                   "f.querySelector('[name=comment]').removeAttribute('required');"
                   "f.querySelector('button').click();")
        refused = browser.wait_js(f"const s = (() => {{{FORM_JS}}})(); return s.answer === 'refused' ? s : null;",
                                  timeout=30, what="the refusal")
        assert refused["status"] == "answer to step 'sign_off' refused: required field missing: comment"

        browser.js("const f = document.querySelector('form.approval');"
                   "f.querySelector('[name=comment]').value = 'looks good';"
                   "f.querySelector('[name=__reason]').value = 'from the page';"
                   "f.querySelector('button').click();")
        accepted = browser.wait_js(f"const s = (() => {{{FORM_JS}}})(); return s.answer === 'accepted' ? s : null;",
                                   timeout=30, what="the answer accepted")
        assert accepted["status"] == "answered by api"
        assert wait_state_sync(http, execution_id) == "COMPLETED"
        detail = http.get(f"/executions/{execution_id}").json()
        assert detail["steps"]["ship"]["result"] == "prod: looks good"
        events = http.get(f"/executions/{execution_id}/events", params={"type": "approval.answered"}).json()
        assert events["events"][0]["payload"]["reason"] == "from the page"


def wait_state_sync(http: httpx.Client, execution_id: str) -> str:
    for _ in range(300):
        state = http.get(f"/executions/{execution_id}/status").json()["state"]
        if state in ("COMPLETED", "FAILED", "CANCELLED"):
            return state
        time.sleep(0.1)
    return state

