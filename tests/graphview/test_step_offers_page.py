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
    assert 'data-control="skip"' in fetch and 'data-control="retry-now"' in fetch
    assert 'data-control="retry-policy"' not in fetch
    # pause offered, resume drawn hidden: the script flips them after an answer
    assert '<form class="control" data-control="pause">' in fetch
    assert '<form class="control" data-control="resume" hidden>' in fetch


def test_no_step_to_control_draws_no_section():
    assert step_control_forms([]) == ""
    assert step_control_forms([{"step": "a", "controls": []}]) == ""
