"""Place a :class:`~.model.GraphView` on a page: layers top to bottom, steps left to right.

Why our own layout: the API's page must work offline (no CDN, no Mermaid JS), and a
playbook graph is small and mostly a DAG once back-edges are set aside, so a layered
layout (longest path from the entry, then a few barycenter sweeps to untangle arcs) is
enough. A final step with no arcs into it goes last, because it runs last.
"""

from __future__ import annotations

from dataclasses import dataclass

from .boxtext import box_height, subtitle
from .model import GraphView

__all__ = ["Box", "Layout", "layout", "NODE_W", "NODE_H", "GAP_X", "GAP_Y", "MARGIN"]

# Tall enough for two lines of detail (a join's or loop's description is longer than one).
NODE_W, NODE_H = 210, 98
GAP_X, GAP_Y = 40, 70
MARGIN = 30


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    layer: int
    h: float = NODE_H   # as tall as its subtitle needs (graphview/boxtext.py), at least NODE_H

    @property
    def cx(self) -> float:
        return self.x + NODE_W / 2


@dataclass(frozen=True)
class Layout:
    boxes: dict[str, Box]
    width: float
    height: float


def layers(view: GraphView) -> dict[str, int]:
    """Longest-path layer of each step over forward arcs (back-edges ignored)."""
    names = [n.name for n in view.nodes]
    ups: dict[str, list[str]] = {n: [] for n in names}
    for edge in view.edges:
        if not edge.back and edge.source != edge.target and edge.source not in ups[edge.target]:
            ups[edge.target].append(edge.source)
    layer: dict[str, int] = {}
    pending = list(names)
    # Forward arcs form a DAG (every cycle lost its back-edge), so this settles in <= n passes.
    while pending:
        rest = []
        for name in pending:
            if all(u in layer for u in ups[name]):
                layer[name] = max((layer[u] + 1 for u in ups[name]), default=0)
            else:
                rest.append(name)
        if len(rest) == len(pending):  # defensive: never loop forever on a malformed view
            for name in rest:
                layer[name] = 0
            break
        pending = rest
    for node in view.nodes:
        if node.final and not ups[node.name]:
            layer[node.name] = max(layer.values()) + 1 if len(names) > 1 else 0
    return layer


def layout(view: GraphView) -> Layout:
    layer = layers(view)
    depth = max(layer.values(), default=0) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    for node in view.nodes:  # YAML order first: authors tend to write steps in flow order
        rows[layer[node.name]].append(node.name)
    ups: dict[str, list[str]] = {n.name: [] for n in view.nodes}
    for edge in view.edges:
        if not edge.back:
            ups[edge.target].append(edge.source)
    for _ in range(2):  # barycenter sweeps: a step sits under the mean of its upstreams
        position = {name: i for row in rows for i, name in enumerate(row)}
        for row in rows[1:]:
            row.sort(key=lambda n: (sum(position[u] for u in ups[n]) / len(ups[n])) if ups[n] else position[n])
            position.update({name: i for i, name in enumerate(row)})
    widest = max(len(row) for row in rows)
    width: float = 2 * MARGIN + widest * NODE_W + (widest - 1) * GAP_X
    heights = {node.name: box_height(len(subtitle(node, NODE_W)), NODE_H) for node in view.nodes}
    boxes: dict[str, Box] = {}
    y: float = MARGIN
    for index, row in enumerate(rows):
        row_h: float = max((heights[name] for name in row), default=NODE_H)
        row_w = len(row) * NODE_W + (len(row) - 1) * GAP_X
        xs = [(width - row_w) / 2 + i * (NODE_W + GAP_X) for i in range(len(row))]  # centered
        if index:
            xs = _under_upstreams(row, xs, ups, boxes, width)
        for name, x in zip(row, xs, strict=True):
            boxes[name] = Box(x=x, y=y, layer=index, h=heights[name])
        y += row_h + GAP_Y
    width = max(width, max(b.x for b in boxes.values()) + NODE_W + MARGIN)
    height = y - GAP_Y + MARGIN
    # Back-edges run down the right-hand side: leave room for them.
    if any(e.back for e in view.edges):
        width += 60
    return Layout(boxes=boxes, width=width, height=height)


def _under_upstreams(row: list[str], xs: list[float], ups: dict[str, list[str]], boxes: dict[str, Box],
                     width: float) -> list[float]:
    """Move each step of a row toward the mean x of its upstreams, keeping order and spacing."""
    out: list[float] = []
    for name, x in zip(row, xs, strict=True):
        placed = [boxes[u].x for u in ups[name] if u in boxes]
        want = sum(placed) / len(placed) if placed else x
        out.append(max(want, out[-1] + NODE_W + GAP_X) if out else max(want, MARGIN))
    overflow = out[-1] + NODE_W + MARGIN - width
    if overflow > 0:  # pull the row back left as far as the margin allows
        shift = min(overflow, out[0] - MARGIN)
        out = [x - shift for x in out]
    return out
