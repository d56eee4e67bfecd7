"""The execution page's redrive (docs/operations.md) in headless Chromium, on a real run, with
the API's token: the page of a FAILED execution shows a Redrive button; pressing it (once the
cause is fixed) starts the redrive and opens the new execution's page, which says where it
comes from and which steps it reused (no tool ran) and which it reran; the old page then links
its redrive; a refusal shows the API's message beside the button."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import httpx
import pytest

from noetl_temporal.store.catalog import Catalog
from tests.support.redrive import STEPS, counts, ten_steps
from tests.support.webdriver import Browser

from .live import LiveServer

pytestmark = pytest.mark.temporal

TOKEN = "page-s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

PAGE_JS = """
const text = id => (document.getElementById(id) || {}).textContent || null;
const control = document.getElementById('redrive-control');
const reused = {};
document.querySelectorAll('g.step').forEach(g => {
  reused[g.dataset.step] = [g.dataset.reused === 'true', g.querySelector('text.state').textContent];
});
const origin = document.querySelector('#redrive-origin a');
const by = document.querySelector('#redriven-by a');
return {path: location.pathname, state: text('execution-state'), stream: document.body.dataset.stream,
        button: !!control && !control.hidden, origin: text('redrive-origin'),
        origin_href: origin && origin.href, reused_steps: text('reused-steps'),
        rerun_steps: text('rerun-steps'), boxes: reused, message: text('redrive-message'),
        by: text('redriven-by'), by_href: by && by.href};
"""


def _skip_without_browser() -> None:
    reason = Browser.skip_reason()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)


@pytest.fixture(scope="module")
def live(temporal, tmp_path_factory, event_store):
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("redrive-page") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-redrive-page-{uuid.uuid4().hex[:8]}",
                    event_store=event_store, execution_timeout_s=120, token=TOKEN) as server:
        yield server


def _wait_state(http: httpx.Client, execution_id: str) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = http.get(f"/executions/{execution_id}/status", headers=AUTH).json()["state"]
        if state in ("COMPLETED", "FAILED", "CANCELLED"):
            return state
        time.sleep(0.3)
    raise AssertionError(f"{execution_id} did not end within 90 s")


def _page(browser: Browser, what: str, predicate: str) -> dict:
    return browser.wait_js(f"const s = (() => {{{PAGE_JS}}})(); return ({predicate}) ? s : null;",
                           timeout=60, what=what)


def test_the_redrive_button_redrives_and_the_new_page_says_what_was_reused(live, tmp_path):
    _skip_without_browser()
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        r = http.post("/executions", json={"playbook": ten_steps("paged"), "payload": {"dir": str(tmp_path)}},
                      headers=AUTH)
        assert r.status_code == 202, r.text
        old = r.json()["execution_id"]
        assert _wait_state(http, old) == "FAILED"
        before = counts(tmp_path)

        browser.open(f"{live.url}/executions/{old}/view?access_token={TOKEN}")
        page = _page(browser, "the FAILED page with its button", "s.state === 'FAILED'")
        assert page["button"] and page["origin"] is None   # no redrive itself

        # A refusal (a step the playbook lacks) shows the API's message; nothing starts.
        browser.js("const o = document.createElement('option'); o.value = 'nope'; "
                   "document.getElementById('redrive-from').appendChild(o); "
                   "document.getElementById('redrive-from').value = 'nope'; "
                   "document.getElementById('redrive-button').click();")
        refused = _page(browser, "the refusal", "(s.message || '').indexOf('refused') >= 0")
        assert "HTTP 422" in refused["message"] and "unknown step 'nope'" in refused["message"]
        assert refused["path"] == f"/executions/{old}/view"

        (tmp_path / "flag").write_text("fixed")
        browser.js("document.getElementById('redrive-from').value = ''; "
                   "document.getElementById('redrive-button').click();")
        moved = _page(browser, "the new execution's page", f"s.path !== '/executions/{old}/view' && s.origin")
        new = moved["path"].split("/")[2]
        assert moved["path"] == f"/executions/{new}/view" and new != old
        done = _page(browser, "the redrive to complete", "s.state === 'COMPLETED' && s.stream === 'ended'")
        assert old in done["origin"] and done["origin_href"] == f"{live.url}/executions/{old}/view?access_token={TOKEN}"
        assert done["reused_steps"] == ", ".join(STEPS[:6]) and done["rerun_steps"] == ", ".join(STEPS[6:])
        assert {name: box for name, box in done["boxes"].items() if box[0]} == {
            name: [True, "reused"] for name in STEPS[:6]}
        assert not done["button"]   # COMPLETED: nothing to redrive
        shots = Path(os.environ.get("NOETL_VIEW_SCREENSHOTS") or tmp_path)   # to look at it yourself
        browser.screenshot(shots / "view-redrive.png")
        after = counts(tmp_path)   # the tools that ran again: s7-s10, once each
        assert {s: after[s] - before[s] for s in STEPS} == {**{s: 0 for s in STEPS[:6]},
                                                              **{s: 1 for s in STEPS[6:]}}
        detail = http.get(f"/executions/{new}", headers=AUTH).json()
        assert {name for name, info in detail["steps"].items() if info.get("reused")} == set(STEPS[:6])

        # A fresh load of the finished redrive draws the same from the server's first paint.
        browser.open(f"{live.url}/executions/{new}/view?access_token={TOKEN}")
        again = _page(browser, "the redrive's page reloaded", "s.stream === 'ended'")
        assert again["reused_steps"] == done["reused_steps"] and again["rerun_steps"] == done["rerun_steps"]
        assert again["boxes"] == done["boxes"]

        # The old page links the redrive (execution.redriven in its stored events).
        browser.open(f"{live.url}/executions/{old}/view?access_token={TOKEN}")
        old_page = _page(browser, "the old page's link to its redrive", "s.by")
        assert new in old_page["by"] and old_page["by_href"] == f"{live.url}/executions/{new}/view?access_token={TOKEN}"
        assert old_page["state"] == "FAILED"   # a redrive is a new execution, not a reset


SLOW = """
metadata: {name: paged-slow}
workflow:
  - step: first
    tool: {kind: python, input: {dir: "{{ workload.dir }}"}, code: "open(dir + '/first', 'a').write('x')\\nresult = 1"}
    next: {arcs: [{step: slow}]}
  - step: slow
    tool:
      kind: python
      input: {dir: "{{ workload.dir }}"}
      code: |
        import pathlib, time
        open(dir + '/slow', 'a').write('x')
        while not pathlib.Path(dir, 'flag').exists():
            time.sleep(0.1)
        result = 2
"""


def test_a_page_open_while_the_run_is_cancelled_offers_the_redrive(live, tmp_path):
    _skip_without_browser()
    with httpx.Client(base_url=live.url, timeout=30) as http, Browser() as browser:
        r = http.post("/executions", json={"playbook": SLOW, "payload": {"dir": str(tmp_path)}}, headers=AUTH)
        assert r.status_code == 202, r.text
        old = r.json()["execution_id"]
        browser.open(f"{live.url}/executions/{old}/view?access_token={TOKEN}")
        running = _page(browser, "the slow step running", "s.boxes.slow && s.state === 'RUNNING' && "
                        "document.querySelector('g.step[data-step=\"slow\"]').dataset.state === 'running'")
        assert not running["button"]   # nothing to redrive while it runs
        assert http.post(f"/executions/{old}/cancel", json={"reason": "stuck"}, headers=AUTH).status_code in (200, 202)
        cancelled = _page(browser, "the button once the followed run is cancelled",
                          "s.state === 'CANCELLED' && s.button")
        assert cancelled["path"] == f"/executions/{old}/view"
        (tmp_path / "flag").write_text("fixed")
        browser.js("document.getElementById('redrive-button').click();")
        done = _page(browser, "the redrive of the cancelled run to complete",
                     f"s.path !== '/executions/{old}/view' && s.state === 'COMPLETED' && s.stream === 'ended'")
        assert old in done["origin"] and done["reused_steps"] == "first" and done["rerun_steps"] == "slow"
        assert (tmp_path / "first").read_text() == "x"   # reused: its tool did not run again
