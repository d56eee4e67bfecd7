"""Static shape of a playbook's step graph: back-edges, joins and reachability.

A step with two or more *forward* upstream steps is a join (BPMN inclusive join): it
waits until no upstream that can still deliver a token is active, then runs once.
Forward means "not a back-edge": back-edges are found by a depth-first walk from the
entry step in YAML order, so a pagination cycle (``fetch -> check -> fetch``) is not
mistaken for a join.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..dsl.models import Playbook, Step

__all__ = ["StepGraph"]


@dataclass
class StepGraph:
    playbook: Playbook
    entry: str
    _reach_cache: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict, repr=False)

    @cached_property
    def steps(self) -> dict[str, Step]:
        """Steps by name. Kept here, on a plain object: the pydantic model's private
        attribute lookup costs more than the dict access on the engine's hot path."""
        return {step.step: step for step in self.playbook.workflow}

    @cached_property
    def successors(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for step in self.playbook.workflow:
            targets: list[str] = []
            for arc in (step.next.arcs if step.next else []):
                if arc.step not in targets:
                    targets.append(arc.step)
            out[step.step] = targets
        return out

    @cached_property
    def back_edges(self) -> frozenset[tuple[str, str]]:
        """Edges that close a cycle in a DFS from the entry (then from any unvisited step)."""
        edges: set[tuple[str, str]] = set()
        visited: set[str] = set()
        on_stack: set[str] = set()

        def visit(root: str) -> None:
            # Iterative DFS: playbooks can be long chains, recursion could overflow.
            stack: list[tuple[str, int]] = [(root, 0)]
            visited.add(root)
            on_stack.add(root)
            while stack:
                node, i = stack[-1]
                succ = self.successors.get(node, [])
                if i < len(succ):
                    stack[-1] = (node, i + 1)
                    nxt = succ[i]
                    if nxt not in self.successors:
                        continue
                    if nxt in on_stack:
                        edges.add((node, nxt))
                    elif nxt not in visited:
                        visited.add(nxt)
                        on_stack.add(nxt)
                        stack.append((nxt, 0))
                else:
                    stack.pop()
                    on_stack.discard(node)

        visit(self.entry)
        for step in self.playbook.workflow:
            if step.step not in visited:
                visit(step.step)
        return frozenset(edges)

    @cached_property
    def forward_upstreams(self) -> dict[str, tuple[str, ...]]:
        ups: dict[str, list[str]] = {name: [] for name in self.successors}
        for src, targets in self.successors.items():
            for dst in targets:
                if dst in ups and (src, dst) not in self.back_edges and src not in ups[dst]:
                    ups[dst].append(src)
        return {k: tuple(v) for k, v in ups.items()}

    @cached_property
    def joins(self) -> frozenset[str]:
        return frozenset(name for name, ups in self.forward_upstreams.items() if len(ups) >= 2)

    def reachable_avoiding(self, start: str, avoid: str) -> frozenset[str]:
        """Steps reachable from ``start`` (itself included) by paths that do not pass ``avoid``."""
        key = (start, avoid)
        cached = self._reach_cache.get(key)
        if cached is not None:
            return cached
        seen = {start}
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in self.successors.get(node, []):
                if nxt != avoid and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        result = frozenset(seen)
        self._reach_cache[key] = result
        return result

    def can_still_deliver(self, join: str, active_steps: set[str]) -> bool:
        """True while some active step may still produce a token for ``join`` via an upstream."""
        upstreams = self.forward_upstreams.get(join, ())
        for active in active_steps:
            if active == join:
                continue
            reach = self.reachable_avoiding(active, join)
            if any(up in reach for up in upstreams):
                return True
        return False
