"""The step graph as a reader sees it, extracted once from a normalized playbook.

Joins and back-edges come from the engine's :class:`~noetl_temporal.engine.graph.StepGraph`
(the one source of truth for what waits for what), so the picture cannot disagree with
the interpreter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..dsl.models import Playbook, Step
from ..engine.graph import StepGraph

__all__ = ["Edge", "GraphView", "LoopInfo", "Node", "graph_view"]


@dataclass(frozen=True)
class LoopInfo:
    iterator: str
    over: str
    mode: str
    max_in_flight: int | str | None  # a `{{ }}` template is rendered when the loop starts


@dataclass(frozen=True)
class Node:
    name: str
    kinds: tuple[str, ...]          # the pipeline's tool kinds, in order
    desc: str | None = None
    loop: LoopInfo | None = None
    join: bool = False
    entry: bool = False
    final: bool = False
    router: str | None = None       # "exclusive"/"inclusive" when the step has two or more arcs
    admit: str | None = None        # "gate (on_deny: wait)" when admission rules exist
    discards: bool = False          # admission drops a refused token (on_deny: discard): "skipped"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str | None               # the arc's `when` ("else" for a catch-all after others)
    order: int | None               # 1-based position among an exclusive router's arcs
    back: bool                      # closes a cycle (not a join input)


@dataclass(frozen=True)
class GraphView:
    name: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)


def graph_view(playbook: Playbook) -> GraphView:
    spec = playbook.executor.spec
    names = {s.step for s in playbook.workflow}
    entry = spec.entry_step if spec.entry_step in names else playbook.workflow[0].step
    graph = StepGraph(playbook=playbook, entry=entry)
    nodes = tuple(_node(step, entry=entry, final=spec.final_step, joins=graph.joins) for step in playbook.workflow)
    edges = tuple(edge for step in playbook.workflow for edge in _edges(step, graph.back_edges, names))
    return GraphView(name=playbook.metadata.name or playbook.metadata.path or "playbook", nodes=nodes, edges=edges)


def _node(step: Step, *, entry: str, final: str | None, joins: frozenset[str]) -> Node:
    loop = None
    if step.loop is not None:
        loop = LoopInfo(iterator=step.loop.iterator, over=_text(step.loop.in_), mode=step.loop.spec.mode,
                        max_in_flight=step.loop.spec.max_in_flight)
    arcs = step.next.arcs if step.next else []
    admit = step.spec.policy.admit if step.spec.policy else None
    return Node(name=step.step, kinds=tuple(task.kind for task in step.tool), desc=step.desc, loop=loop,
                join=step.step in joins, entry=step.step == entry, final=step.step == final,
                router=step.next.spec.mode if step.next and len(arcs) >= 2 else None,
                admit=f"admit rules (on_deny: {admit.on_deny})" if admit and admit.rules else None,
                discards=bool(admit and admit.rules and admit.on_deny == "discard"))


def _edges(step: Step, back_edges: frozenset[tuple[str, str]], names: set[str]) -> list[Edge]:
    if step.next is None:
        return []
    exclusive = step.next.spec.mode == "exclusive" and len(step.next.arcs) >= 2
    out = []
    for index, arc in enumerate(step.next.arcs):
        if arc.step not in names:  # validation refuses these; never draw a dangling arc
            continue
        label = arc.when
        if label is None and exclusive and index > 0:
            label = "else"  # first match wins: an unguarded arc after guarded ones is the fallback
        out.append(Edge(source=step.step, target=arc.step, label=label,
                        order=index + 1 if exclusive else None, back=(step.step, arc.step) in back_edges))
    return out


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
