"""A :class:`~.model.GraphView` drawn as inline SVG for the API's execution page.

Each step is ``<g class="step" data-step="NAME" data-state="idle">`` so the page's script
(and a test reading the DOM) can find a step by name and mark its state; the ``state``
text inside it says the state in words, so the picture reads the same without colour.
Arcs are ``<g class="arc" data-source data-target>`` with their ``when`` as a label
(placed so that no two overlap, cut to fit: the full guard is in the tooltip; see
:mod:`.labels`). The server draws each step in the state it knows (:mod:`.states`).
"""

from __future__ import annotations

import textwrap
from html import escape

from .labels import clip, place_labels
from .layout import GAP_Y, NODE_H, NODE_W, Box, layout
from .mermaid import node_label
from .model import Edge, GraphView, Node
from .states import STATE_WORDS, Painted

__all__ = ["render_svg", "clip"]

_CHARS_PER_LINE = 30
_DETAIL_LINES = 2
_ARC_LABEL = 34
_DISCARDS = ' data-discards="true"'


def _a(value: object) -> str:
    return escape(str(value), quote=True)


def _classes(node: Node) -> str:
    flags = {"loop": node.loop is not None, "join": node.join, "final": node.final, "entry": node.entry}
    return " ".join(["step", *(name for name, on in flags.items() if on)])


def _detail_lines(parts: list[str], width: int) -> list[str]:
    """A step's detail (loop, join, admission, router...) on at most two lines, the second
    cut with "…" when there is more: one line cut "join: runs once, after its live b…"."""
    lines = textwrap.wrap(" · ".join(parts), width, break_long_words=True, break_on_hyphens=False)
    if len(lines) > _DETAIL_LINES:
        lines = lines[:_DETAIL_LINES - 1] + [clip(" ".join(lines[_DETAIL_LINES - 1:]), width)]
    return lines


def _step(index: int, node: Node, box: Box, state: str, progress: str) -> str:
    lines = node_label(node)
    tooltip = "\n".join(lines + ([node.desc] if node.desc else []))
    x, y = box.x, box.y
    detail = "".join(f'<text class="detail" x="{x + 10:.0f}" y="{y + 55 + 15 * i:.0f}">{escape(line)}</text>'
                     for i, line in enumerate(_detail_lines(lines[2:], _CHARS_PER_LINE + 4)))
    return (
        f'<g class="{_classes(node)}" id="step-{index}" data-step="{_a(node.name)}" data-state="{_a(state)}"'
        f"{_DISCARDS if node.discards else ''}>"
        f"<title>{escape(tooltip)}</title>"
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="8"/>'
        f'<text class="name" x="{x + 10:.0f}" y="{y + 20:.0f}">{escape(clip(node.name, _CHARS_PER_LINE - 4))}</text>'
        f'<text class="kinds" x="{x + 10:.0f}" y="{y + 38:.0f}">{escape(clip(lines[1], _CHARS_PER_LINE + 4))}</text>'
        f"{detail}"
        f'<text class="state" x="{x + 10:.0f}" y="{y + 90:.0f}">{escape(STATE_WORDS[state])}</text>'
        f'<text class="progress" x="{x + NODE_W - 10:.0f}" y="{y + 90:.0f}" text-anchor="end">{escape(progress)}</text>'
        "</g>")


def _arc(edge: Edge, boxes: dict[str, Box], repeat: int) -> tuple[str, tuple[float, float, str]]:
    """The arc's path and its label's anchor (centre, baseline, text)."""
    src, dst = boxes[edge.source], boxes[edge.target]
    shift = repeat * 14  # parallel arcs between the same steps fan out a little
    if edge.back or dst.layer <= src.layer:
        # Cycles go up the right-hand side, outside the columns.
        x1, y1 = src.x + NODE_W, src.y + NODE_H / 2
        x2, y2 = dst.x + NODE_W, dst.y + NODE_H / 2
        bulge = max(x1, x2) + 50 + shift
        path = f"M{x1:.0f},{y1:.0f} C{bulge:.0f},{y1:.0f} {bulge:.0f},{y2:.0f} {x2 + 4:.0f},{y2:.0f}"
        lx, ly = bulge - 8, (y1 + y2) / 2
    else:
        x1, y1 = src.cx + shift, src.y + NODE_H
        x2, y2 = dst.cx + shift, dst.y
        mid = GAP_Y * 0.6
        path = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{y1 + mid:.0f} {x2:.0f},{y2 - mid:.0f} {x2:.0f},{y2 - 4:.0f}"
        lx, ly = (x1 + x2) / 2, (y1 + y2) / 2
    return f'<path d="{path}" marker-end="url(#arrow)"/>', (lx, ly + 4, _arc_text(edge))


def _arc_text(edge: Edge) -> str:
    """The arc's label: its ``when`` ("else" for a fallback), numbered in an exclusive router."""
    text = edge.label or ""
    return f"{edge.order}. {text}".strip() if edge.order is not None else text


def _title(edge: Edge) -> str:
    text = _arc_text(edge)
    return f"<title>{escape(edge.source)} → {escape(edge.target)}{': ' + escape(text) if text else ''}</title>"


def _arc_group(edge: Edge, path: str) -> str:
    cls = "arc back" if edge.back else "arc"
    return f'<g class="{cls}" data-source="{_a(edge.source)}" data-target="{_a(edge.target)}">{_title(edge)}{path}</g>'


def _arcs(view: GraphView, boxes: dict[str, Box]) -> tuple[list[str], list[str]]:
    """The arcs' paths, and their labels: drawn after every path, so no arc runs through
    another's label (`==` crossed by a line reads like a pipe)."""
    seen: dict[tuple[str, str], int] = {}
    drawn = []
    for edge in view.edges:
        key = (edge.source, edge.target)
        drawn.append(_arc(edge, boxes, seen.get(key, 0)))
        seen[key] = seen.get(key, 0) + 1
    labelled = [anchor for _, anchor in drawn if anchor[2]]
    placed = iter(place_labels(labelled, _ARC_LABEL))
    paths, labels = [], []
    for edge, (path, anchor) in zip(view.edges, drawn, strict=True):
        paths.append(_arc_group(edge, path))
        if anchor[2]:
            at = next(placed)
            # its own group, so hovering the label shows the full guard as the arc does
            labels.append(f'<g class="label" data-source="{_a(edge.source)}" data-target="{_a(edge.target)}">'
                          f'{_title(edge)}<text class="arc-label" x="{at.x:.0f}" y="{at.y:.0f}" '
                          f'text-anchor="middle">{escape(at.text)}</text></g>')
    return paths, labels


def render_svg(view: GraphView, painted: Painted | None = None) -> str:
    placed = layout(view)
    arcs, labels = _arcs(view, placed.boxes)
    painted = painted or Painted()
    steps = [_step(i, node, placed.boxes[node.name], painted.states.get(node.name, "idle"),
                   painted.progress.get(node.name, "")) for i, node in enumerate(view.nodes)]
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
        f'<g class="arcs">{"".join(arcs)}</g><g class="arc-labels">{"".join(labels)}</g>{start}<g class="steps">{"".join(steps)}</g></svg>')
