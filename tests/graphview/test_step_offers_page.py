"""The execution page's per-step controls (graphview/step_offers.py): a block per running or
paused step with a form per control that applies, nothing for a finished execution."""

from __future__ import annotations

from noetl_temporal.graphview.step_offers import step_control_forms


def test_only_the_controls_that_apply_are_drawn():
    html = step_control_forms([{"step": "fetch", "iteration": None, "paused": False,
                                "controls": ["skip", "retry-now", "pause"]},
                               {"step": "each", "iteration": 3, "paused": False, "controls": ["skip"]},
                               {"step": "idle", "iteration": None, "paused": False, "controls": []}])
    assert 'data-step="fetch" data-state="running"' in html and 'data-step="each" data-iteration="3"' in html
    assert 'data-step="idle"' not in html   # nothing applies: no block
    fetch = html.split('data-step="each"')[0]
    assert '<form class="control" data-control="skip">' in fetch
    assert '<form class="control" data-control="retry-now">' in fetch
    # every control is drawn, those that do not apply hidden: the script shows them as they apply
    assert '<form class="control" data-control="retry-policy" hidden>' in fetch
    assert '<form class="control" data-control="pause">' in fetch
    assert '<form class="control" data-control="resume" hidden>' in fetch


def test_no_step_to_control_yet_draws_the_section_and_a_block_template():
    for offers in ([], [{"step": "a", "controls": []}]):
        html = step_control_forms(offers)
        assert html.startswith('<section id="step-controls">') and 'data-step="a"' not in html
        template = html.split('<template id="step-control-template">')[1]
        assert template.startswith('<div class="step-control" data-step=""') and template.count("<form") == 5


def test_a_fast_path_task_waiting_to_retry_says_so():
    html = step_control_forms([{"step": "fetch", "iteration": None, "paused": False, "controls": ["skip", "retry-now"],
                                "retrying": {"attempt": 2, "until": "2026-11-27T20:00:00Z", "last_error": "exit <3>"}}])
    assert ('<p class="control-retrying">retrying: attempt 2 waits until 2026-11-27T20:00:00Z '
            '(last error: exit &lt;3&gt;)</p>') in html
