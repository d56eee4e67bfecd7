"""The execution page's pure parts: layered layout, SVG, the state table, the HTML shell."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import pytest

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.graphview import graph_view
from noetl_temporal.graphview.labels import place_labels
from noetl_temporal.graphview.layout import NODE_H, NODE_W, layers, layout
from noetl_temporal.graphview.page import execution_page, stream_url
from noetl_temporal.graphview.states import (
    PICTURE,
    STATE_WORDS,
    STEP_EVENTS,
    WATCHED_TYPES,
    first_paint,
    step_state,
)
from noetl_temporal.graphview.svg import render_svg
from tests.dsl.helpers import CORPUS, playbook
from tests.graphview.test_graph_view import CYCLE, INCLUSIVE_JOIN


def _view(text: str):
    return graph_view(load_playbook_text(text, "pb.yaml").playbook)


@pytest.mark.parametrize(("text", "want"), [
    (INCLUSIVE_JOIN, {"a": 0, "b": 1, "c": 1, "d": 2}),
    # the back-edge check -> fetch is ignored; the final step with no arcs in goes last
    (CYCLE, {"fetch": 0, "check": 1, "wrap": 2}),
])
def test_layers(text, want):
    assert layers(_view(text)) == want


def test_layout_places_every_step_without_overlap():
    placed = layout(_view(INCLUSIVE_JOIN))
    boxes = list(placed.boxes.values())
    for i, one in enumerate(boxes):
        assert 0 <= one.x and one.x + NODE_W <= placed.width and one.y + NODE_H <= placed.height
        for other in boxes[i + 1:]:
            assert abs(one.x - other.x) >= NODE_W or abs(one.y - other.y) >= NODE_H


def _failed(step_status):
    return {"event_type": "step.failed", "status": "error", "payload": {"meta": {"step_status": step_status}}}


@pytest.mark.parametrize(("event", "want"), [
    ({"event_type": "step.scheduled", "status": "in_progress"}, "SCHEDULED"),
    ({"event_type": "step.started", "status": "in_progress"}, "RUNNING"),
    ({"event_type": "step.done", "status": "success"}, "COMPLETED"),
    # an operator skipped it (behaviour skipped-step-status): the API says SKIPPED, so does the page
    ({"event_type": "step.done", "status": "success", "payload": {"meta": {"step_status": "SKIPPED"}}}, "SKIPPED"),
    (_failed("FAILED"), "FAILED"),
    (_failed("HANDLED"), "HANDLED"),      # the API says HANDLED: the page must not say failed
    (_failed("CANCELLED"), "CANCELLED"),
    ({"event_type": "step.failed", "status": "error"}, "FAILED"),
    ({"event_type": "policy.admit.evaluated", "status": "skipped", "payload": {"allowed": False}}, "DENIED"),
    ({"event_type": "policy.admit.evaluated", "status": "skipped",
      "payload": {"allowed": False, "reason": "execution stopping (fail_fast)"}}, "SKIPPED"),
    ({"event_type": "policy.admit.evaluated", "status": "success"}, None),
    ({"event_type": "next.evaluated", "status": "success"}, None),
    ({"event_type": "task.done", "status": "success"}, None),
])
def test_step_state_speaks_the_apis_words(event, want):
    assert step_state(event) == want
    assert want is None or want in PICTURE


def test_a_refusal_by_a_discarding_step_is_skipped():
    denied = {"event_type": "policy.admit.evaluated", "status": "skipped", "payload": {"allowed": False}}
    assert step_state(denied, discards=True) == "SKIPPED"


def test_every_picture_state_has_words_and_the_table_is_watched():
    assert set(PICTURE.values()) == set(STATE_WORDS)
    assert {row[0] for row in STEP_EVENTS} <= set(WATCHED_TYPES)
    assert "playbook.finished" in WATCHED_TYPES and "loop.iteration.done" in WATCHED_TYPES
    assert "playbook.processed" in WATCHED_TYPES   # the last event: its seq is the event count


def test_first_paint_takes_the_apis_steps_and_the_newer_runs():
    detail = {"steps": {"a": {"status": "COMPLETED"}, "b": {"status": "HANDLED"}, "c": {"status": "COMPLETED"}},
              "result": {"denied_steps": ["d"]}}
    events = [{"seq": 3, "event_type": "step.started", "entity_id": "c", "status": "in_progress"},
              {"seq": 5, "event_type": "loop.started", "entity_id": "a", "payload": {"meta": {"count": 2}}},
              {"seq": 6, "event_type": "loop.iteration.done", "entity_id": "a"},
              {"seq": 9, "event_type": "policy.admit.evaluated", "entity_id": "e", "status": "skipped",
               "payload": {"reason": "execution stopping (fail_fast)"}}]
    painted = first_paint(["a", "b", "c", "d", "e", "f"], detail, events)
    assert painted.states == {"a": "done", "b": "handled", "c": "running", "d": "denied", "e": "skipped",
                              "f": "idle"}
    assert painted.progress == {"a": "1/2"} and painted.last_seq == 9
    assert painted.loops == {"a": (1, 2)}   # the page counts on from here (issue 39)

    # a cycle: `a` completed once, then its next token was refused; the newest event wins
    again = first_paint(["a"], detail, [*events, {"seq": 12, "event_type": "policy.admit.evaluated",
                                                 "entity_id": "a", "status": "skipped", "payload": {}}])
    assert again.states == {"a": "denied"}


def _boxes_overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_labels_leaving_one_step_never_overlap():
    long = "{{ event.name == 'step.failed' and ctx.retries > 3 }}"
    placed = place_labels([(100, 50, long), (160, 50, long), (220, 50, "else"), (100, 50, long)], limit=34)
    for i, one in enumerate(placed):
        assert one.text and (one.text == "else" or one.text.endswith("…"))
        for other in placed[i + 1:]:
            assert not _boxes_overlap(one.box, other.box), (one, other)


HOSTILE = playbook("""
    workflow:
      - step: '</script><script>alert(1)</script>'
        tool: {kind: noop}
        next: {arcs: [{step: 'b&"c', when: "{{ 1 < 2 }}"}]}
      - step: 'b&"c'
        tool: {kind: noop}
""")


def test_svg_is_well_formed_and_escapes_names():
    svg = render_svg(_view(HOSTILE))
    root = ElementTree.fromstring(svg)  # well-formed XML despite <, & and quotes in names
    ns = "{http://www.w3.org/2000/svg}"
    steps = [g for g in root.iter(f"{ns}g") if "step" in (g.get("class") or "").split()]
    assert [g.get("data-step") for g in steps] == ['</script><script>alert(1)</script>', 'b&"c']
    arcs = [g for g in root.iter(f"{ns}g") if "arc" in (g.get("class") or "").split()]
    assert [(a.get("data-source"), a.get("data-target")) for a in arcs] == [(steps[0].get("data-step"), 'b&"c')]
    assert "<script>" not in svg


def test_page_script_config_cannot_close_the_script_block():
    html = execution_page(_view(HOSTILE), "exec-</script>", state="RUNNING", source="inline")
    config = re.search(r'<script type="application/json" id="noetl-config">(.*?)</script>', html, re.S).group(1)
    data = json.loads(config)
    assert data["execution_id"] == "exec-</script>"
    assert data["events"] == [list(r) for r in STEP_EVENTS] and data["types"] == list(WATCHED_TYPES)
    assert data["picture"] == PICTURE
    assert html.count("<script") == 2  # the config block and the live script, nothing injected


def test_stream_url_carries_types_and_token():
    assert stream_url("x").startswith("events/stream?type=step.scheduled&type=step.started")
    assert stream_url("x", "t&k").endswith("access_token=t%26k")


def test_corpus_layouts_never_overlap():
    files = sorted(CORPUS.rglob("*.yaml"))
    assert files, f"no playbooks at {CORPUS}"
    from noetl_temporal.dsl import load_playbook
    from noetl_temporal.errors import PlaybookInvalid

    for path in files:
        try:
            view = graph_view(load_playbook(path).playbook)
        except PlaybookInvalid:
            continue
        placed = layout(view)
        boxes = list(placed.boxes.values())
        for i, one in enumerate(boxes):
            assert 0 <= one.x and one.x + NODE_W <= placed.width, path
            for other in boxes[i + 1:]:
                assert abs(one.x - other.x) >= NODE_W or abs(one.y - other.y) >= NODE_H, path
        labels = _drawn_labels(render_svg(view))
        for i, one in enumerate(labels):
            for other in labels[i + 1:]:
                assert not _boxes_overlap(one, other), (path, one, other)


def _drawn_labels(svg: str) -> list[tuple[float, float, float, float]]:
    """The arc labels' boxes as drawn (monospace: width = length x CHAR_W)."""
    from noetl_temporal.graphview.labels import Placed

    root = ElementTree.fromstring(svg)
    return [Placed(float(t.get("x")), float(t.get("y")), t.text or "").box
            for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "arc-label"]
