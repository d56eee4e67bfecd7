"""The execution page's pure parts: layered layout, SVG, the state table, the HTML shell."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import pytest

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.graphview import graph_view
from noetl_temporal.graphview.layout import NODE_H, NODE_W, layers, layout
from noetl_temporal.graphview.page import execution_page, stream_url
from noetl_temporal.graphview.states import STEP_STATES, WATCHED_TYPES, state_of
from noetl_temporal.graphview.svg import render_svg

from .helpers import playbook
from .test_graph_view import CYCLE, INCLUSIVE_JOIN


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


@pytest.mark.parametrize(("event_type", "status", "want"), [
    ("step.started", "in_progress", "running"),
    ("step.done", "success", "done"),
    ("step.failed", "error", "failed"),
    ("step.failed", "handled", "handled"),
    ("next.evaluated", "handled", "handled"),
    ("next.evaluated", "success", None),
    ("policy.admit.evaluated", "skipped", "denied"),
    ("policy.admit.evaluated", "success", None),
    ("task.done", "success", None),
])
def test_state_table(event_type, status, want):
    assert state_of(event_type, status) == want


def test_watched_types_cover_the_table():
    assert {row[0] for row in STEP_STATES} <= set(WATCHED_TYPES)
    assert "playbook.finished" in WATCHED_TYPES and "loop.iteration.done" in WATCHED_TYPES


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
    assert data["states"] == [list(r) for r in STEP_STATES] and data["types"] == list(WATCHED_TYPES)
    assert html.count("<script") == 2  # the config block and the live script, nothing injected


def test_stream_url_carries_types_and_token():
    assert stream_url("x").startswith("events/stream?type=step.scheduled&type=step.started")
    assert stream_url("x", "t&k").endswith("access_token=t%26k")


def test_corpus_layouts_never_overlap():
    from .test_graph_view import REPO

    places = [base / "shared" / "corpus" / "noetl" for base in (REPO.parent, REPO.parent.parent)]
    files = sorted(f for place in places if place.is_dir() for f in place.rglob("*.yaml"))
    if not files:
        pytest.skip(f"no corpus at {places}")
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
