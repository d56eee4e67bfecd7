"""A :class:`~.model.GraphView` drawn as inline SVG for the API's execution page.

Each step is ``<g class="step" data-step="NAME" data-state="idle">`` so the page's script
(and a test reading the DOM) can find a step by name and mark its state; the ``state``
text inside it says the state in words, so the picture reads the same without colour.
A box's subtitle is wrapped to its width and the box grows to hold it (:mod:`.boxtext`).
Arcs are ``<g class="arc" data-source data-target>``; their ``when`` labels are
``<g class="label">`` drawn after all arcs, each on an opaque box so no line runs through
its text (placed so that no two overlap, cut to fit: the full guard is in the tooltip; see
:mod:`.labels`). The server draws each step in the state it knows (:mod:`.states`).
"""

from __future__ import annotations

from html import escape

from .boxtext import NAME_Y, PAD_X, SUB_LINE, SUB_Y, state_y, subtitle
from .labels import Placed, clip, place_labels
from .layout import GAP_Y, NODE_W, Box, layout
from .mermaid import node_label
from .model import Edge, GraphView, Node
from .states import STATE_WORDS, Painted

__all__ = ["render_svg", "clip"]

_CHARS_PER_LINE = 30
_ARC_LABEL = 34
_DISCARDS = ' data-discards="true"'


def _a(value: object) -> str:
    return escape(str(value), quote=True)


def _classes(node: Node) -> str:
    flags = {"loop": node.loop is not None, "join": node.join, "final": node.final, "entry": node.entry}
    return " ".join(["step", *(name for name, on in flags.items() if on)])


def _step(index: int, node: Node, box: Box, state: str, progress: str) -> str:
    lines = node_label(node)
    tooltip = "\n".join(lines + ([node.desc] if node.desc else []))
    x, y = box.x, box.y
    sub = "".join(f'<text class="sub" x="{x + PAD_X:.0f}" y="{y + SUB_Y + i * SUB_LINE:.0f}">{escape(line)}</text>'
                  for i, line in enumerate(subtitle(node, NODE_W)))
    bottom = y + state_y(box.h)
    return (
        f'<g class="{_classes(node)}" id="step-{index}" data-step="{_a(node.name)}" data-state="{_a(state)}"'
        f"{_DISCARDS if node.discards else ''}>"
        f"<title>{escape(tooltip)}</title>"
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{box.h:.0f}" rx="8"/>'
        f'<text class="name" x="{x + PAD_X:.0f}" y="{y + NAME_Y:.0f}">{escape(clip(node.name, _CHARS_PER_LINE - 4))}</text>'
        f"{sub}"
        f'<text class="state" x="{x + PAD_X:.0f}" y="{bottom:.0f}">{escape(STATE_WORDS[state])}</text>'
        f'<text class="progress" x="{x + NODE_W - PAD_X:.0f}" y="{bottom:.0f}" text-anchor="end">{escape(progress)}</text>'
        "</g>")


# where else on an arc its label may go, nearest the middle first (a fraction of the way)
_ALONG = (0.38, 0.62, 0.27, 0.73, 0.17, 0.83)


def _bezier(t: float, *pts: tuple[float, float]) -> tuple[float, float]:
    """The point at ``t`` on the cubic through ``pts`` (start, two controls, end)."""
    weights = ((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3)
    return (sum(w * p[0] for w, p in zip(weights, pts, strict=True)),
            sum(w * p[1] for w, p in zip(weights, pts, strict=True)))


def _arc(edge: Edge, boxes: dict[str, Box], repeat: int) -> tuple[str, tuple[float, float, str],
                                                                  list[tuple[float, float]]]:
    """The arc's path, its label's anchor (centre, baseline, text) and other places on it."""
    src, dst = boxes[edge.source], boxes[edge.target]
    shift = repeat * 14  # parallel arcs between the same steps fan out a little
    if edge.back or dst.layer <= src.layer:
        # Cycles go up the right-hand side, outside the columns.
        x1, y1 = src.x + NODE_W, src.y + src.h / 2
        x2, y2 = dst.x + NODE_W, dst.y + dst.h / 2
        bulge = max(x1, x2) + 50 + shift
        path = f"M{x1:.0f},{y1:.0f} C{bulge:.0f},{y1:.0f} {bulge:.0f},{y2:.0f} {x2 + 4:.0f},{y2:.0f}"
        lx, ly = bulge - 8, (y1 + y2) / 2
        others: list[tuple[float, float]] = []
    else:
        x1, y1 = src.cx + shift, src.y + src.h
        x2, y2 = dst.cx + shift, dst.y
        mid = GAP_Y * 0.6
        path = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{y1 + mid:.0f} {x2:.0f},{y2 - mid:.0f} {x2:.0f},{y2 - 4:.0f}"
        lx, ly = (x1 + x2) / 2, (y1 + y2) / 2
        curve = ((x1, y1), (x1, y1 + mid), (x2, y2 - mid), (x2, y2 - 4))
        others = [(x, y + 4) for x, y in (_bezier(t, *curve) for t in _ALONG)]
    return f'<path d="{path}" marker-end="url(#arrow)"/>', (lx, ly + 4, _arc_text(edge)), others


def _arc_text(edge: Edge) -> str:
    """The arc's label: its ``when`` ("else" for a fallback), numbered in an exclusive router."""
    text = edge.label or ""
    return f"{edge.order}. {text}".strip() if edge.order is not None else text


def _title(edge: Edge) -> str:
    text = _arc_text(edge)
    return f"<title>{escape(edge.source)} → {escape(edge.target)}{': ' + escape(text) if text else ''}</title>"


def _ends(edge: Edge) -> str:
    return f'data-source="{_a(edge.source)}" data-target="{_a(edge.target)}"'


def _arc_group(edge: Edge, path: str) -> str:
    cls = "arc back" if edge.back else "arc"
    return f'<g class="{cls}" {_ends(edge)}>{_title(edge)}{path}</g>'


def _label_group(edge: Edge, at: Placed) -> str:
    """A label on an opaque box: drawn after every arc, so no line runs through its text
    (``==`` would read like a pipe)."""
    x0, y0, x1, y1 = at.box
    return (f'<g class="label" {_ends(edge)}>{_title(edge)}'
            f'<rect class="arc-label-bg" x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="3"/>'
            f'<text class="arc-label" x="{at.x:.1f}" y="{at.y:.1f}" text-anchor="middle">{escape(at.text)}</text></g>')


def _arcs(view: GraphView, boxes: dict[str, Box]) -> tuple[list[str], list[str]]:
    """The arcs' groups and their labels' groups, drawn in that order."""
    seen: dict[tuple[str, str], int] = {}
    drawn = []
    for edge in view.edges:
        key = (edge.source, edge.target)
        drawn.append(_arc(edge, boxes, seen.get(key, 0)))
        seen[key] = seen.get(key, 0) + 1
    labelled = [(edge, anchor, others) for edge, (_, anchor, others) in zip(view.edges, drawn, strict=True)
                if anchor[2]]
    steps = [(b.x, b.y, b.x + NODE_W, b.y + b.h) for b in boxes.values()]
    placed = place_labels([anchor for _, anchor, _ in labelled], _ARC_LABEL, obstacles=steps,
                          elsewhere=[others for _, _, others in labelled])
    arcs = [_arc_group(edge, path) for edge, (path, _, _) in zip(view.edges, drawn, strict=True)]
    labels = [_label_group(edge, at) for (edge, _, _), at in zip(labelled, placed, strict=True)]
    return arcs, labels


def render_svg(view: GraphView, painted: Painted | None = None) -> str:
    placed = layout(view)
    arcs, labels = _arcs(view, placed.boxes)
    painted = painted or Painted()
    progress = painted.progress
    steps = [_step(i, node, placed.boxes[node.name], painted.states.get(node.name, "idle"),
                   progress.get(node.name, "")) for i, node in enumerate(view.nodes)]
    entry = next((n for n in view.nodes if n.entry), None)
    start = ""
    if entry is not None:
        box = placed.boxes[entry.name]
        start = (f'<g class="start"><circle cx="{box.x - 14:.0f}" cy="{box.y + 12:.0f}" r="6"/>'
                 f"<title>entry step</title></g>")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="playbook-graph" role="img" '
        f'aria-label="step graph of {_a(view.name)}" width="{placed.width:.0f}" height="{placed.height:.0f}" '
        f'viewBox="0 0 {placed.width:.0f} {placed.height:.0f}">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
        f'<g class="arcs">{"".join(arcs)}</g><g class="labels">{"".join(labels)}</g>{start}<g class="steps">{"".join(steps)}</g></svg>')
