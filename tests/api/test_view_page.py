"""The execution page (``GET /executions/{id}/view``) in headless Chromium, on a real run.

The page is loaded while the execution waits at an approval gate: the steps that ran,
failed, were denied and the loop's progress must already show, fed by the live event
stream; then the gate is opened through the API and the page must follow to the end.
A second load of the finished run replays the stream and shows the same picture.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import httpx
import pytest

from noetl_temporal.store.catalog import Catalog
from tests.support.webdriver import Browser

from .conftest import app_client, make_settings, playbook, wait_state
from .live import LiveServer

pytestmark = pytest.mark.temporal

PICTURED = playbook("""
    metadata: {name: pictured, path: tests/pictured}
    workflow:
      - step: begin
        tool: {kind: noop}
        next:
          spec: {mode: inclusive}
          arcs: [{step: items}, {step: boom}, {step: gate}, {step: never}]
      - step: items
        loop: {in: "{{ [1, 2, 3, 4, 5] }}", iterator: n, spec: {mode: parallel}}
        tool: {kind: noop}
      - step: boom
        tool: {kind: python, code: "raise ValueError('boom')"}
        next: {arcs: [{step: recover, when: "{{ event.name == 'step.failed' }}"}]}
      - step: recover
        tool: {kind: noop}
      - step: never
        spec: {policy: {admit: {rules: [{when: "{{ ctx.nope }}", allow: true}]}}}
        tool: {kind: noop}
      - step: gate
        spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", allow: true}], on_deny: wait}}}
        tool: {kind: noop}
        next: {arcs: [{step: after}]}
      - step: after   # runs until the test creates the flag file: "running" is seen live
        tool: {kind: shell, cmd: 'while [ ! -e "{{ workload.flag }}" ]; do sleep 0.1; done'}
""")

STATES_JS = """
const out = {};
document.querySelectorAll('g.step').forEach(g => {
  out[g.dataset.step] = [g.dataset.state, g.querySelector('text.state').textContent,
                         g.querySelector('text.progress').textContent];
});
return {steps: out, state: document.getElementById('execution-state').textContent,
        stream: document.body.dataset.stream, events: Number(document.getElementById('event-count').textContent)};
"""

# A failure an arc took care of reads "handled" once the engine reports it (issue 12);
# until then it is a plain failure. Either way it must not read "done".
FAILED_OR_HANDLED = {"failed", "handled"}


def _skip_without_browser() -> None:
    reason = Browser.skip_reason()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)


@pytest.fixture(scope="module")
def live(temporal, tmp_path_factory, event_store):
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("view") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-view-{uuid.uuid4().hex[:8]}", event_store=event_store,
                    execution_timeout_s=60, heartbeat_timeout_s=2) as server:
        yield server


def _snapshot(browser: Browser) -> dict:
    return browser.js(STATES_JS)


def test_page_marks_steps_live_in_chromium(live, tmp_path):
    _skip_without_browser()
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        flag = tmp_path / "go"
        r = http.post("/executions", json={"playbook": PICTURED, "payload": {"flag": str(flag)}})
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        assert r.json()["links"]["view"] == f"/executions/{execution_id}/view"
        browser.open(live.url + r.json()["links"]["view"])

        # While the run waits at the gate, everything before it is already marked.
        def waiting(s: dict) -> bool:
            steps = s["steps"]
            return (steps["gate"][0] == "denied" and steps["items"][0] == "done" and steps["recover"][0] == "done"
                    and steps["never"][0] == "denied" and steps["boom"][0] == "handled")

        before = browser.wait_js(f"const s = (() => {{{STATES_JS}}})(); return ({_js_pred()}) ? s : null;",
                                 timeout=40, what="the gate denied and the other branches marked")
        assert waiting(before), before
        steps = before["steps"]
        assert steps["begin"][:2] == ["done", "done"]
        assert steps["items"] == ["done", "done", "5/5"]
        assert steps["gate"][1] == "denied (admission)"
        assert steps["after"] == ["idle", "not started", ""]
        assert before["state"] == "RUNNING" and before["stream"] in ("connecting", "open")   # drawn first by the server
        assert http.get(f"/executions/{execution_id}/status").json()["state"] == "RUNNING"

        # Open the gate through the API: the open page follows the run to its end.
        assert http.post(f"/executions/{execution_id}/ctx", json={"patch": {"approved": True}}).status_code == 200
        running = browser.wait_js(
            f"const s = (() => {{{STATES_JS}}})(); return s.steps.after[0] === 'running' ? s : null;",
            timeout=30, what="the step after the gate running")
        assert running["steps"]["gate"][0] == "done" and running["steps"]["after"][1] == "running"
        assert running["state"] == "RUNNING"
        shots = Path(os.environ.get("NOETL_VIEW_SCREENSHOTS") or tmp_path)  # to look at them yourself
        browser.screenshot(shots / "view-running.png")
        flag.touch()
        after = browser.wait_js(
            f"const s = (() => {{{STATES_JS}}})(); return s.stream === 'ended' ? s : null;",
            timeout=40, what="the stream to end")
        assert after["state"] == "COMPLETED"
        assert after["steps"]["gate"][0] == "done" and after["steps"]["after"][0] == "done"
        assert after["steps"]["never"][0] == "denied"  # never admitted: listed in denied_steps
        assert after["steps"]["boom"][:2] == ["handled", "failed, handled"]   # the API says HANDLED
        assert after["events"] > before["events"]
        browser.screenshot(tmp_path / "live.png")

        # A fresh load of the finished run replays the stream to the same picture.
        browser.open(f"{live.url}/executions/{execution_id}/view")
        again = browser.wait_js(f"const s = (() => {{{STATES_JS}}})(); return s.stream === 'ended' ? s : null;",
                                timeout=30, what="the replayed stream to end")
        assert again["steps"] == after["steps"] and again["state"] == "COMPLETED"
        shot = shots / "view-done.png"
        browser.screenshot(shot)
        assert shot.stat().st_size > 10_000


def _js_pred() -> str:
    return ("s.steps.gate[0] === 'denied' && s.steps.items[0] === 'done' && s.steps.recover[0] === 'done'"
            " && s.steps.never[0] === 'denied' && s.steps.boom[0] === 'handled'")


async def test_page_is_served_with_the_pinned_graph_and_token(temporal, task_queue, catalog, event_store,
                                                               tmp_path):
    from noetl_temporal.hosting.worker import build_worker

    settings = make_settings(temporal, task_queue, catalog, event_store, token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    async with build_worker(temporal.client, task_queue=task_queue, event_store=event_store), \
            app_client(settings) as http:
        flag = tmp_path / "go"
        flag.touch()  # the last step does not wait
        r = await http.post("/executions", json={"playbook": PICTURED.replace("ctx.approved", "true"),
                                                 "payload": {"flag": str(flag)}}, headers=auth)
        execution_id = r.json()["execution_id"]
        await wait_state(_Authed(http, auth), execution_id)
        assert (await http.get(f"/executions/{execution_id}/view")).status_code == 401
        page = await http.get(f"/executions/{execution_id}/view", params={"access_token": "s3cret"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        html = page.text   # a finished run: the server draws each step as the API says
        steps = (await http.get(f"/executions/{execution_id}", headers=auth)).json()["steps"]
        assert {name: info["status"] for name, info in steps.items()} == {
            "begin": "COMPLETED", "items": "COMPLETED", "boom": "HANDLED", "recover": "COMPLETED",
            "gate": "COMPLETED", "after": "COMPLETED"}
        for name, state in (("begin", "done"), ("items", "done"), ("boom", "handled"), ("recover", "done"),
                            ("gate", "done"), ("after", "done"), ("never", "denied")):
            assert f'data-step="{name}" data-state="{state}"' in html, name
        assert 'data-stream="ended"' in html   # final: no stream to follow
        assert "access_token=s3cret" not in html   # nothing to follow, so no token in the page
        assert 'id="execution-state" data-state="COMPLETED"' in html
        stream = await http.get(f"/executions/{execution_id}/events/stream",
                                params={"access_token": "s3cret", "type": "step.done"})
        assert stream.status_code == 200 and "event: end" in stream.text
        assert (await http.get(f"/executions/{execution_id}/view", params={"access_token": "wrong"})).status_code == 401
        assert (await http.get("/executions/nope-123/view", headers=auth)).status_code == 404


class _Authed:
    """``wait_state`` with the bearer header on every GET."""

    def __init__(self, http: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self.http, self.headers = http, headers

    async def get(self, url: str, **kwargs):
        return await self.http.get(url, headers=self.headers, **kwargs)


OVERVIEW_JS = """
const out = {};
document.querySelectorAll('#overview td.count').forEach(td => { out[td.dataset.state] = Number(td.textContent); });
return {counts: out, boxes: document.querySelectorAll('g.step').length, stream: document.body.dataset.stream,
        state: document.getElementById('execution-state').textContent,
        failed: document.getElementById('list-failed').textContent};
"""


def test_a_big_playbook_gets_an_overview_that_follows_the_run(live, tmp_path):
    """Past MAX_DRAWN_STEPS the page counts steps by state instead of drawing a box each."""
    from benchmarks.engine_scale import chain
    from noetl_temporal.graphview.page import MAX_DRAWN_STEPS

    _skip_without_browser()
    steps = MAX_DRAWN_STEPS + 100
    with httpx.Client(base_url=live.url, timeout=60) as http, Browser() as browser:
        r = http.post("/executions", json={"playbook": chain(steps)})
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        page = http.get(f"/executions/{execution_id}/view")
        assert page.status_code == 200 and len(page.text) < 200_000 and "<svg" not in page.text
        browser.open(live.url + f"/executions/{execution_id}/view")
        after = browser.wait_js(f"const s = (() => {{{OVERVIEW_JS}}})(); return s.stream === 'ended' ? s : null;",
                                timeout=90, what="the stream to end")
        assert after["boxes"] == 0 and after["state"] == "COMPLETED"
        assert after["counts"]["done"] == steps and after["counts"]["idle"] == 0, after
        assert after["failed"] == "none"
        browser.screenshot(tmp_path / "overview.png")


# ------------------------------------------------------------------ every state, against the API

EVERY_STATE = playbook("""
    metadata: {name: every-state, path: tests/every-state}
    executor: {spec: {failure: {mode: fail_fast}}}
    workflow:
      - step: begin
        tool: {kind: noop}
        next:
          spec: {mode: inclusive}
          arcs:
            - {step: slow, when: "{{ workload.flag != 'a long guard that needs cutting to fit beside the others' }}"}
            - {step: handled_fail, when: "{{ workload.flag != 'another long guard leaving the very same step' }}"}
            - {step: gate, when: "{{ workload.flag != 'and a third long guard from the same step as well' }}"}
            - {step: dropped, when: "{{ workload.flag != 'the fourth long guard, on the same step again' }}"}
      - step: slow     # running until boom stops the run: cancelled
        tool: {kind: shell, cmd: "sleep 30"}
      - step: handled_fail
        tool: {kind: python, code: "raise ValueError('handled')"}
        next: {arcs: [{step: recover, when: "{{ event.name == 'step.failed' }}"}]}
      - step: recover
        tool: {kind: noop}
        next: {arcs: [{step: boom}, {step: unreached, when: "{{ false }}"}]}   # first match: boom
      - step: boom     # fails (unhandled, fail_fast) once the test creates the flag file
        tool: {kind: shell, cmd: 'while [ ! -e "{{ workload.flag }}" ]; do sleep 0.1; done; exit 3'}
      - step: unreached   # no token ever: not started
        tool: {kind: noop}
      - step: gate     # denied while the run goes on; dropped when it stops: skipped
        spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", allow: true}], on_deny: wait}}}
        tool: {kind: noop}
      - step: dropped  # refused and discarded: skipped
        spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", allow: true}], on_deny: discard}}}
        tool: {kind: noop}
""")

#: the API's step state -> the picture's, written out here (not imported) so the page is
#: checked against the API's words, not against itself
API_TO_PICTURE = {"COMPLETED": "done", "FAILED": "failed", "HANDLED": "handled", "CANCELLED": "cancelled"}

LABEL_BOXES_JS = """
return Array.from(document.querySelectorAll('text.arc-label')).map(t => {
  const b = t.getBBox(); return [t.textContent, b.x, b.y, b.x + b.width, b.y + b.height];
});
"""


def _expected_from_api(http: httpx.Client, execution_id: str) -> tuple[dict[str, str], dict]:
    """Each step's picture state as the API says it: ``steps[*].status`` and
    ``summary.denied_steps`` from the detail, the dropped tokens from the events."""
    detail = http.get(f"/executions/{execution_id}").json()
    expected = {name: API_TO_PICTURE[info["status"]] for name, info in detail["steps"].items()}
    for name in (detail.get("summary") or {}).get("denied_steps") or ():
        expected.setdefault(name, "denied")
    admits = http.get(f"/executions/{execution_id}/events",
                      params={"type": "policy.admit.evaluated", "limit": 1000}).json()["events"]
    for event in admits:
        reason = str(event["payload"].get("reason") or "")
        if event["status"] == "skipped" and (reason.startswith("execution stopping") or event["entity_id"] == "dropped"):
            expected.setdefault(event["entity_id"], "skipped")
    return expected, detail


def _assert_labels_apart(browser: Browser) -> None:
    boxes = browser.js(LABEL_BOXES_JS)
    assert len(boxes) >= 5
    for i, one in enumerate(boxes):
        assert one[0], "an empty label"
        for other in boxes[i + 1:]:
            apart = one[3] <= other[1] or other[3] <= one[1] or one[4] <= other[2] or other[4] <= one[2]
            assert apart, (one, other)


def test_every_state_is_drawn_as_the_api_says_live_and_on_first_paint(live, tmp_path):
    _skip_without_browser()
    names = ["begin", "slow", "handled_fail", "recover", "boom", "unreached", "gate", "dropped"]
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        flag = tmp_path / "fail-now"
        r = http.post("/executions", json={"playbook": EVERY_STATE, "payload": {"flag": str(flag)}})
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        browser.open(f"{live.url}/executions/{execution_id}/view")
        running = browser.wait_js(
            f"const s = (() => {{{STATES_JS}}})(); const t = s.steps;"
            " return (t.slow[0] === 'running' && t.boom[0] === 'running' && t.gate[0] === 'denied'"
            " && t.handled_fail[0] === 'handled' && t.dropped[0] === 'skipped') ? s : null;",
            timeout=40, what="running, denied, handled and skipped steps drawn live")
        assert running["steps"]["handled_fail"][1] == "failed, handled"
        assert running["steps"]["unreached"][:2] == ["idle", "not started"]
        assert running["steps"]["recover"][0] == "done" and running["state"] == "RUNNING"
        detail = http.get(f"/executions/{execution_id}").json()   # what the API says meanwhile
        assert detail["steps"]["handled_fail"]["status"] == "HANDLED"
        _assert_labels_apart(browser)

        flag.touch()   # boom fails: fail_fast cancels slow and drops the gate's token
        live_end = browser.wait_js(f"const s = (() => {{{STATES_JS}}})(); return s.stream === 'ended' ? s : null;",
                                   timeout=40, what="the stream to end")
        expected, detail = _expected_from_api(http, execution_id)
        assert detail["state"] == "FAILED"
        assert expected == {"begin": "done", "slow": "cancelled", "handled_fail": "handled", "recover": "done",
                            "boom": "failed", "gate": "skipped", "dropped": "skipped"}, expected
        drawn = {name: live_end["steps"][name][0] for name in names}
        assert drawn == {**expected, "unreached": "idle"}
        assert live_end["state"] == "FAILED"
        assert live_end["events"] == detail["event_count"]   # the header agrees with the API
        browser.screenshot(tmp_path / "every-state-live.png")

        # A fresh load: the server's first paint, before (and without) any stream.
        page = http.get(f"/executions/{execution_id}/view").text
        for name in names:
            assert f'data-step="{name}" data-state="{drawn[name]}"' in page, name
        assert f'<span id="event-count">{detail["event_count"]}</span>' in page
        browser.open(f"{live.url}/executions/{execution_id}/view")
        first = browser.js(f"return (() => {{{STATES_JS}}})();")
        assert first["steps"] == live_end["steps"] and first["state"] == "FAILED" and first["stream"] == "ended"
        assert first["events"] == detail["event_count"]
        _assert_labels_apart(browser)
        shots = Path(os.environ.get("NOETL_VIEW_SCREENSHOTS") or tmp_path)
        browser.screenshot(shots / "view-every-state.png")


# ------------------------------------------------------------------ a page opened mid-loop (issue 39)

SLOW_LOOP = playbook("""
    metadata: {name: slow-loop, path: tests/slow-loop}
    workflow:
      - step: items   # one item a second, one after the other: the page opens between them
        loop: {in: "{{ [1, 2, 3, 4, 5, 6] }}", iterator: n, spec: {mode: sequential}}
        tool: {kind: shell, cmd: "sleep 1"}
""")


def test_a_page_opened_mid_loop_counts_the_loop_to_its_end(live, tmp_path):
    """The loop started before the page opened: its counter starts from the server's count
    and goes on from the stream, to 6/6 without a reload (and never past it)."""
    _skip_without_browser()
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        r = http.post("/executions", json={"playbook": SLOW_LOOP})
        assert r.status_code == 202, r.text
        execution_id = r.json()["execution_id"]
        _wait_events(http, execution_id, "loop.iteration.done", 2)
        browser.open(f"{live.url}/executions/{execution_id}/view")
        first = browser.js(f"return (() => {{{STATES_JS}}})();")
        assert first["stream"] != "ended" and first["steps"]["items"][2] in ("2/6", "3/6", "4/6"), first
        end = browser.wait_js(f"const s = (() => {{{STATES_JS}}})(); return s.stream === 'ended' ? s : null;",
                              timeout=40, what="the stream to end")
        assert end["state"] == "COMPLETED"
        assert end["steps"]["items"] == ["done", "done", "6/6"], end
        # with the browser's own fonts, every line of a box (its wrapped loop subtitle too) fits in it
        assert browser.js(TEXT_OUTSIDE_BOXES_JS) == []
        assert browser.js("return document.querySelectorAll('g[data-step=items] text.sub').length") == 3
        shots = Path(os.environ.get("NOETL_VIEW_SCREENSHOTS") or tmp_path)
        browser.screenshot(shots / "view-mid-loop.png")


TEXT_OUTSIDE_BOXES_JS = """
const out = [];
document.querySelectorAll('g.step').forEach(g => {
  const r = g.querySelector('rect').getBBox();
  g.querySelectorAll('text').forEach(t => {
    const b = t.getBBox();
    if (b.x < r.x || b.x + b.width > r.x + r.width || b.y < r.y || b.y + b.height > r.y + r.height) {
      out.push([g.dataset.step, t.textContent, [b.x, b.y, b.width, b.height], [r.x, r.y, r.width, r.height]]);
    }
  });
});
return out;
"""


def _wait_events(http: httpx.Client, execution_id: str, event_type: str, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = http.get(f"/executions/{execution_id}/events", params={"type": event_type}).json()["events"]
        if len(events) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} {event_type} events after {timeout}s")
