"""The execution page's drawing, measured (issue 39): no arc line runs through a label's
text unless an opaque box masks it, no label hides under a step's box, and a box's
subtitle is shown whole, inside the box. Labels and subtitles are monospace, so their
boxes are known exactly from their length (graphview/labels.py CHAR_W)."""

from __future__ import annotations

import re
from importlib.resources import files
from xml.etree import ElementTree

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.graphview import graph_view
from noetl_temporal.graphview.labels import CHAR_W, Placed
from noetl_temporal.graphview.layout import NODE_W
from noetl_temporal.graphview.mermaid import node_label
from noetl_temporal.graphview.svg import render_svg
from tests.dsl.helpers import playbook

NS = "{http://www.w3.org/2000/svg}"

# Guards with `==` on arcs that leave one step, a loop, a join, a gate, a router: each
# thing a subtitle says, and arcs that skip a layer (past another step's box).
SHAPES = playbook("""
    workflow:
      - step: start
        tool: {kind: noop}
        next:
          spec: {mode: inclusive}
          arcs:
            - {step: fetch, when: "{{ workload.mode == 'fetch' }}"}
            - {step: items, when: "{{ workload.mode == 'loop' }}"}
            - {step: check}
      - step: fetch
        tool: [{kind: http, url: "http://127.0.0.1:1/x", method: GET}, {kind: python, code: "result = 1"}]
        next: {arcs: [{step: join_all}]}
      - step: items
        loop: {in: "{{ [1, 2, 3, 4, 5, 6] }}", iterator: n, spec: {mode: parallel, max_in_flight: 2}}
        tool: {kind: noop}
        next: {arcs: [{step: join_all}]}
      - step: check
        tool: {kind: noop}
        next:
          spec: {mode: exclusive}
          arcs:
            - {step: join_all, when: "{{ ctx.count == 3 }}"}
            - {step: gate}
      - step: gate
        spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", allow: true}], on_deny: wait}}}
        tool: {kind: noop}
        next: {arcs: [{step: join_all}]}
      - step: join_all
        tool: {kind: noop}
""")


def _svg() -> tuple[ElementTree.Element, list[ElementTree.Element]]:
    view = graph_view(load_playbook_text(SHAPES, "pb.yaml").playbook)
    root = ElementTree.fromstring(render_svg(view))
    return root, list(root.iter())   # document order = paint order


def _curve(d: str, samples: int = 400) -> list[tuple[float, float]]:
    """Points along an arc's path: ``M x,y C x,y x,y x,y`` (one cubic Bézier)."""
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", d)]
    assert d.startswith("M") and " C" in d and len(numbers) == 8, d
    (x0, y0, x1, y1, x2, y2, x3, y3) = numbers
    out = []
    for i in range(samples + 1):
        t = i / samples
        a, b, c, e = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3
        out.append((a * x0 + b * x1 + c * x2 + e * x3, a * y0 + b * y1 + c * y2 + e * y3))
    return out


def _inside(point: tuple[float, float], box: tuple[float, float, float, float]) -> bool:
    return box[0] < point[0] < box[2] and box[1] < point[1] < box[3]


def _label_box(text: ElementTree.Element) -> tuple[float, float, float, float]:
    return Placed(float(text.get("x") or 0), float(text.get("y") or 0), text.text or "").box


def _rect(el: ElementTree.Element) -> tuple[float, float, float, float]:
    x, y = float(el.get("x") or 0), float(el.get("y") or 0)
    return x, y, x + float(el.get("width") or 0), y + float(el.get("height") or 0)


def _covers(outer: tuple[float, ...], inner: tuple[float, ...], eps: float = 0.1) -> bool:
    """``outer`` holds ``inner`` (``eps``: the SVG's numbers are rounded to 0.1 px)."""
    return (outer[0] <= inner[0] + eps and outer[1] <= inner[1] + eps
            and inner[2] <= outer[2] + eps and inner[3] <= outer[3] + eps)


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_no_arc_runs_through_a_label_unless_an_opaque_box_masks_it():
    root, order = _svg()
    paths = [p for g in root.iter(f"{NS}g") if "arc" in (g.get("class") or "").split() for p in g.iter(f"{NS}path")]
    last_path = max(order.index(p) for p in paths)
    labels = [t for t in root.iter(f"{NS}text") if t.get("class") == "arc-label"]
    assert len(labels) == 4
    crossed = 0
    for text in labels:
        box = _label_box(text)
        if not any(_inside(point, box) for path in paths for point in _curve(path.get("d") or "")):
            continue
        crossed += 1
        # a line crosses this label: an opaque box must cover the text, painted after every line
        masks = [r for r in root.iter(f"{NS}rect") if r.get("class") == "arc-label-bg"
                 and _covers(_rect(r), box) and last_path < order.index(r) < order.index(text)]
        assert masks, f"an arc runs through the label {text.text!r}, nothing masks it"
    assert crossed, "the fixture must have a line under a label, or this test checks nothing"
    css = files("noetl_temporal.graphview").joinpath("assets", "page.css").read_text()
    rule = re.search(r"rect\.arc-label-bg\s*\{([^}]*)\}", css)
    assert rule and re.search(r"fill:\s*#fff\b", rule.group(1)) and "opacity" not in rule.group(1), rule


def test_no_label_hides_under_a_step_box():
    root, _ = _svg()
    boxes = [_rect(r) for g in root.iter(f"{NS}g") if "step" in (g.get("class") or "").split()
             for r in g.iter(f"{NS}rect")]
    for text in (t for t in root.iter(f"{NS}text") if t.get("class") == "arc-label"):
        for box in boxes:
            assert not _overlap(_label_box(text), box), (text.text, box)


def test_subtitles_are_whole_and_inside_their_boxes():
    view = graph_view(load_playbook_text(SHAPES, "pb.yaml").playbook)
    root = ElementTree.fromstring(render_svg(view))
    for g in (g for g in root.iter(f"{NS}g") if "step" in (g.get("class") or "").split()):
        node = view.node(g.get("data-step") or "")
        rect = _rect(next(g.iter(f"{NS}rect")))
        subs = [t for t in g.iter(f"{NS}text") if t.get("class") == "sub"]
        # every word of the subtitle, in order: nothing cut ("join: runs once, after its live b…")
        assert " ".join(t.text or "" for t in subs).split() == " ".join(node_label(node)[1:]).split(), node.name
        state = next(t for t in g.iter(f"{NS}text") if t.get("class") == "state")
        name = next(t for t in g.iter(f"{NS}text") if t.get("class") == "name")
        baselines = [float(t.get("y") or 0) for t in (name, *subs, state)]
        assert baselines == sorted(baselines) and all(b - a >= 14 for a, b in zip(baselines, baselines[1:], strict=False))
        assert rect[1] + 12 <= baselines[0] and baselines[-1] + 4 <= rect[3], node.name   # inside, top to bottom
        for t in subs:   # monospace: its width is its length
            left = float(t.get("x") or 0)
            assert rect[0] < left and left + len(t.text or "") * CHAR_W <= rect[2] - 4, (node.name, t.text)
    joins = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "sub" and "join" in (t.text or "")]
    assert joins and not any("…" in (t or "") for t in joins)


def test_a_long_loop_expression_is_cut_after_a_few_lines_and_the_box_holds_them():
    long = "{{ " + " + ".join(f"workload.list_{i}" for i in range(30)) + " }}"
    text = playbook(f"""
        workflow:
          - step: many
            loop: {{in: "{long}", iterator: x}}
            tool: {{kind: noop}}
    """)
    root = ElementTree.fromstring(render_svg(graph_view(load_playbook_text(text, "pb.yaml").playbook)))
    subs = [t.text or "" for t in root.iter(f"{NS}text") if t.get("class") == "sub"]
    assert len(subs) == 4 and subs[-1].endswith("…")   # the kinds, then 3 lines of the loop
    assert all(len(s) * CHAR_W <= NODE_W - 20 for s in subs)
