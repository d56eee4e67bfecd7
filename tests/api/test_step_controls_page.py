"""The execution page's per-step controls (docs/approvals.md, "On the execution page") in
headless Chromium, on a real run with the API's auth on: a step stuck retrying is offered
what its validators accept; a refusal of the workflow's validator appears as written; the
retry policy is changed, the step retried now, paused and resumed, then skipped with a
result its arcs route on, and the page shows each outcome and the step SKIPPED. The controls
are live: a step that starts failing after the page was served gets its controls (and a
fast-path task says it waits to retry) without a reload, and a step that ends loses them."""

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

TOKEN = "step-controls-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# fetch fails at every attempt and waits 40 s between them (inside the execution's timeout:
# Temporal gives up at once on a retry that would start after it)
STUCK = playbook("""
    metadata: {name: stuck-page}
    workflow:
      - step: start
        tool: {kind: noop}
        next: {arcs: [{step: fetch}]}
      - step: fetch
        tool:
          kind: shell
          cmd: "echo x >> {{ workload.mark }}; exit 3"   # a line per attempt
          spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 6, delay: 40}}]}}
        next: {arcs: [{step: empty, when: "{{ fetch.rows == 0 }}"}, {step: load}]}
      - step: empty
        tool: {kind: noop, result: "nothing to load ({{ fetch.rows }} rows)"}
      - step: load
        tool: {kind: noop}
""")

BLOCK_JS = """
const b = document.querySelector('.step-control[data-step="fetch"]');
if (!b) return null;
const box = document.querySelector('g.step[data-step="fetch"]');
return {state: b.dataset.state, outcome: b.dataset.outcome || null, ended: b.dataset.ended || null,
        status: b.querySelector('.control-status').textContent,
        shown: b.querySelector('.control-state').textContent,
        offered: Array.from(b.querySelectorAll('form.control')).filter(f => !f.hidden).map(f => f.dataset.control),
        box: box ? box.dataset.state : null};
"""


@pytest.fixture(scope="module")
def live(temporal, tmp_path_factory, event_store):
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("controls") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-controls-{uuid.uuid4().hex[:8]}",
                    event_store=event_store, execution_timeout_s=300, heartbeat_timeout_s=2, token=TOKEN) as server:
        yield server


def _act(browser: Browser, control: str, *, reason: str = "", fill: dict[str, str] | None = None) -> dict:
    """Fill the block's reason and the control's inputs, press its button, wait for the answer."""
    sets = "".join(f"f.querySelector('[name={name}]').value = {value!r};" for name, value in (fill or {}).items())
    browser.js("const b = document.querySelector('.step-control[data-step=\"fetch\"]');"
               "b.removeAttribute('data-outcome');"
               f"b.querySelector('.control-reason').value = {reason!r};"
               f"const f = b.querySelector('form[data-control=\"{control}\"]');{sets}"
               "f.querySelector('button').click();")
    return browser.wait_js(f"const s = (() => {{{BLOCK_JS}}})(); "
                           "return s && s.outcome && s.outcome !== 'sending' ? s : null;",
                           timeout=30, what=f"the answer to {control}")


def _events(http: httpx.Client, execution_id: str, kind: str) -> list[dict]:
    return http.get(f"/executions/{execution_id}/events", params={"type": kind}, headers=AUTH).json()["events"]


def test_each_step_control_acts_from_the_page(live, tmp_path):
    reason = Browser.skip_reason()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        mark = tmp_path / "attempts"
        r = http.post("/executions", json={"playbook": STUCK, "payload": {"mark": str(mark)}}, headers=AUTH)
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        view = f"/executions/{execution_id}/view?access_token={TOKEN}"
        for _ in range(300):   # the page offers what applies when it is served: wait for the backoff
            if 'data-control="retry-now">' in http.get(view).text:   # offered (drawn, not hidden)
                break
            time.sleep(0.1)
        browser.open(live.url + view)
        first = browser.wait_js(f"return (() => {{{BLOCK_JS}}})();", timeout=30, what="the step's controls")
        assert first["offered"] == ["skip", "retry-now", "retry-policy", "pause"] and first["state"] == "running"
        assert mark.read_text().splitlines() == ["x"]   # one attempt ran; the second waits out its 40 s

        # the workflow's validator refuses, and the page says why, as written
        refused = _act(browser, "retry-policy", fill={"attempts": "1"})
        assert refused["outcome"] == "refused"
        assert refused["status"].startswith("step 'fetch' is at attempt 2 already: attempts must be 2 or more"), refused

        changed = _act(browser, "retry-policy", reason="give it longer", fill={"attempts": "6", "delay": "30"})
        assert changed["outcome"] == "retry-policy", changed
        assert changed["status"] == "retry policy changed (by api): at most 6 attempts, 30 s apart"

        now = _act(browser, "retry-now", reason="source is back")
        assert now["outcome"] == "retry-now" and now["status"] == "retrying now: the backoff was skipped (by api)"
        assert "retry-now" not in now["offered"]
        for _ in range(100):   # the second attempt ran at once (within 10 s), not 30 s later
            if len(mark.read_text().splitlines()) >= 2:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"retry now started no attempt: {mark.read_text()!r}")

        paused = _act(browser, "pause", reason="db maintenance")
        # (retry now shows again once the page asked after attempt 2 failed: the page is live)
        assert paused["state"] == "paused" and [c for c in paused["offered"] if c != "retry-now"] == \
            ["skip", "retry-policy", "resume"], paused
        assert paused["status"] == "paused; paused steps: fetch"
        assert http.get(f"/executions/{execution_id}/status", headers=AUTH).json()["paused_steps"] == ["fetch"]
        resumed = _act(browser, "resume")
        assert resumed["state"] == "running" and resumed["status"] == "resumed; paused steps: none"

        skipped = _act(browser, "skip", reason="source is down; nothing new today", fill={"result": '{"rows": 0}'})
        assert skipped["outcome"] == "skip" and skipped["status"] == "skipped by api", skipped
        # the page follows the run: the box and the block say SKIPPED once the step ends
        done = browser.wait_js(f"const s = (() => {{{BLOCK_JS}}})(); return s.ended ? s : null;",
                               timeout=30, what="the step's end on the page")
        assert done["ended"] == "SKIPPED" and done["box"] == "skipped"
        assert done["shown"] == "skipped by api: source is down; nothing new today (ended SKIPPED)"
        browser.screenshot(tmp_path / "step-controls.png")

        for _ in range(300):
            status = http.get(f"/executions/{execution_id}/status", headers=AUTH).json()
            if status["state"] != "RUNNING":
                break
            time.sleep(0.1)
        assert status["state"] == "COMPLETED"   # a skip is a recovery
        detail = http.get(f"/executions/{execution_id}", headers=AUTH).json()
        assert detail["steps"]["fetch"]["status"] == "SKIPPED"
        assert detail["steps"]["empty"]["result"] == "nothing to load (0 rows)"
        # each control is in the events, by the API's token, with its reason
        assert [e["payload"]["reason"] for e in _events(http, execution_id, "step.retry.policy")] == ["give it longer"]
        assert [e["payload"]["by"] for e in _events(http, execution_id, "step.retry.now")] == ["api"]
        assert [e["payload"]["reason"] for e in _events(http, execution_id, "step.paused")] == ["db maintenance"]
        assert len(_events(http, execution_id, "step.resumed")) == 1
        [skip] = _events(http, execution_id, "step.skipped")
        assert skip["payload"]["result"] == {"rows": 0} and skip["payload"]["by"] == "api"

        # a finished execution's page offers no control, and the routes want the token
        assert 'id="step-controls"' not in http.get(view).text
        assert http.post(f"/executions/{execution_id}/steps/fetch/retry-now", json={}).status_code == 401


# `wait` runs until the test lets it; then `fetch`, a fast-path task, fails at every attempt and
# waits 40 s between them (the workflow's own retry loop)
LATER = playbook("""
    metadata: {name: later-page}
    workflow:
      - step: start
        tool: {kind: noop}
        next: {arcs: [{step: wait}]}
      - step: wait
        tool: {kind: shell, cmd: 'while [ ! -e "{{ workload.flag }}" ]; do sleep 0.1; done'}
        next: {arcs: [{step: fetch}]}
      - step: fetch
        tool:
          kind: shell
          cmd: "echo 'source unreachable' >&2; exit 3"
          spec:
            local: true
            policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 6, delay: 40}}]}
""")

BLOCKS_JS = """
const out = {};
document.querySelectorAll('#step-controls > .step-control').forEach(b => {
  out[b.dataset.step] = {ended: b.dataset.ended || null, shown: b.querySelector('.control-state').textContent,
    offered: Array.from(b.querySelectorAll('form.control')).filter(f => !f.hidden).map(f => f.dataset.control),
    retrying: b.querySelector('.control-retrying').hidden ? null : b.querySelector('.control-retrying').textContent};
});
return {blocks: out, asked: Number(document.getElementById('step-controls').dataset.asked || 0)};
"""


def test_controls_follow_the_run_without_a_reload(live, tmp_path):
    reason = Browser.skip_reason()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        flag = tmp_path / "go"
        r = http.post("/executions", json={"playbook": LATER, "payload": {"flag": str(flag)}}, headers=AUTH)
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        controls = f"/executions/{execution_id}/steps/controls"
        assert http.get(controls).status_code == 401   # the API's auth, as the other routes
        for _ in range(300):   # served while `wait` runs: `fetch` has not started
            offers = http.get(controls, headers=AUTH).json()
            if [o["step"] for o in offers["steps"]] == ["wait"]:
                break
            time.sleep(0.1)
        assert offers["answered"] is True and offers["state"] == "RUNNING"
        started = time.monotonic()
        browser.open(f"{live.url}/executions/{execution_id}/view?access_token={TOKEN}")
        first = browser.wait_js(f"const s = (() => {{{BLOCKS_JS}}})(); return s.blocks.wait ? s : null;",
                                timeout=30, what="the running step's controls")
        assert "fetch" not in first["blocks"] and "skip" in first["blocks"]["wait"]["offered"]

        flag.touch()   # `wait` ends, `fetch` starts and fails: its controls come without a reload
        later = browser.wait_js(
            f"const s = (() => {{{BLOCKS_JS}}})(); const f = s.blocks.fetch;"
            "return f && f.offered.includes('retry-now') && s.blocks.wait.ended ? s : null;",
            timeout=30, what="fetch's controls, and wait's end")
        fetch, ended = later["blocks"]["fetch"], later["blocks"]["wait"]
        assert ended == {"ended": "COMPLETED", "shown": "ended COMPLETED", "offered": [], "retrying": None}, ended
        assert fetch["offered"][:2] == ["skip", "retry-now"] and fetch["shown"] == "running", fetch
        # the fast path's wait, as `status` says it (the workflow's status query)
        [wait] = http.get(f"/executions/{execution_id}/status", headers=AUTH).json()["retrying"]
        assert fetch["retrying"] == (f"retrying: attempt 2 waits until {wait['until']} "
                                     f"(last error: {wait['last_error']})"), fetch
        assert "source unreachable" in fetch["retrying"]

        # skipped through the API: the page's block ends and offers nothing more
        r = http.post(f"/executions/{execution_id}/steps/fetch/skip", json={"reason": "source is down"}, headers=AUTH)
        assert r.status_code == 200, r.text
        done = browser.wait_js(f"const s = (() => {{{BLOCKS_JS}}})(); return s.blocks.fetch.ended ? s : null;",
                               timeout=30, what="fetch's end on the page")
        assert done["blocks"]["fetch"]["ended"] == "SKIPPED" and done["blocks"]["fetch"]["offered"] == []
        # bounded: coalesced asks (events, and every 5 s), never one per event
        elapsed = time.monotonic() - started
        assert 1 <= done["asked"] <= elapsed + 3, (done["asked"], elapsed)
        browser.screenshot(tmp_path / "live-controls.png")
        for _ in range(300):
            if http.get(f"/executions/{execution_id}/status", headers=AUTH).json()["state"] != "RUNNING":
                break
            time.sleep(0.1)
        assert http.get(controls, headers=AUTH).json() == {"execution_id": execution_id, "state": "COMPLETED",
                                                          "answered": True, "steps": []}
