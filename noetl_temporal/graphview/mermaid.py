"""A :class:`~.model.GraphView` as a Mermaid flowchart (``noetl-temporal graph``).

Conventions (also in the legend comment of the output):

* a box per step: name, tool kinds, then what shapes its run (loop, join, admission,
  router mode, final step); loops are subroutine boxes, joins hexagons;
* arcs carry their ``when``; an exclusive router's arcs are numbered (first match wins)
  and an unguarded arc after guarded ones reads ``else``; back-edges (cycles) are dotted;
* ``start`` points at the entry step; the final step is linked from ``end of flow``
  because it runs once, after every other branch has finished.

Step names and guards become labels only: node ids are ``s0, s1 ...``, so any step name
is safe, and label text is escaped with Mermaid's entity codes.
"""

from __future__ import annotations

from .model import Edge, GraphView, Node

__all__ = ["to_mermaid", "escape", "node_label", "MAX_LABEL"]

#: guards longer than this are cut (Mermaid boxes do not wrap well); the full text is in the YAML
MAX_LABEL = 80

_ENTITIES = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;"}


def escape(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes; newlines become spaces)."""
    text = " ".join(text.split())
    if len(text) > MAX_LABEL:
        text = text[: MAX_LABEL - 1] + "…"
    return "".join(_ENTITIES.get(ch, ch) for ch in text)


def node_label(node: Node) -> list[str]:
    """The lines of a step's box, plain text (shared with the SVG drawing)."""
    lines = [node.name, " → ".join(node.kinds)]
    if node.loop is not None:
        bound = f", max {node.loop.max_in_flight}" if node.loop.max_in_flight else ""
        lines.append(f"loop {node.loop.iterator} in {node.loop.over} ({node.loop.mode}{bound})")
    if node.join:
        lines.append("join: runs once, after its live branches")
    if node.admit:
        lines.append(node.admit)
    if node.router:
        lines.append(f"next: {node.router}")
    if node.final:
        lines.append("final step: runs once, last")
    return lines


def _shape(node_id: str, node: Node) -> str:
    label = "<br/>".join(escape(line) for line in node_label(node))
    if node.loop is not None:
        return f'{node_id}[["{label}"]]'
    if node.join:
        return f'{node_id}{{{{"{label}"}}}}'
    return f'{node_id}["{label}"]'


def _edge(ids: dict[str, str], edge: Edge) -> str:
    arrow = "-.->" if edge.back else "-->"
    text = edge.label or ""
    if edge.order is not None:
        text = f"{edge.order}. {text}".strip()
    label = f'|"{escape(text)}"|' if text else ""
    return f"    {ids[edge.source]} {arrow}{label} {ids[edge.target]}"


def to_mermaid(view: GraphView) -> str:
    ids = {node.name: f"s{i}" for i, node in enumerate(view.nodes)}
    lines = ["flowchart TD", f"    %% playbook {escape(view.name)}: loops [[ ]], joins {{{{ }}}}, "
             "numbered arcs = exclusive (first match wins), dotted = back-edge (cycle)"]
    lines.append('    start(("start"))')
    for node in view.nodes:
        lines.append(f"    {_shape(ids[node.name], node)}")
    for node in view.nodes:
        if node.entry:
            lines.append(f"    start --> {ids[node.name]}")
    lines += [_edge(ids, edge) for edge in view.edges]
    finals = [n for n in view.nodes if n.final]
    if finals:
        lines.append('    flow_end(("end of flow"))')
        lines += [f'    flow_end -.->|"then"| {ids[n.name]}' for n in finals]
    lines += ["    classDef loopStep fill:#eef6ff,stroke:#3b7dd8",
              "    classDef joinStep fill:#fff4e0,stroke:#d88a00",
              "    classDef finalStep fill:#eefbea,stroke:#2e8b3a"]
    for cls in ("loop", "join", "final"):
        members = [ids[n.name] for n in view.nodes if _has(n, cls)]
        if members:
            lines.append(f"    class {','.join(members)} {cls}Step")
    return "\n".join(lines) + "\n"


def _has(node: Node, cls: str) -> bool:
    return {"loop": node.loop is not None, "join": node.join, "final": node.final}[cls]
