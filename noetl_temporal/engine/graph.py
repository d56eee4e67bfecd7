"""Static shape of a playbook's step graph: back-edges, joins and reachability.

Forward means "not a back-edge": back-edges are found by a depth-first walk from the
entry step in YAML order, so a pagination cycle (``fetch -> check -> fetch``) is not
mistaken for a join.

Joins are decided once per playbook, from structure (docs/semantics.md "Tokens and
joins"): two forward upstreams ``u`` and ``v`` of a step are *concurrent* when neither is
a forward ancestor of the other and some inclusive router reaches them through different
arcs. A step with concurrent upstreams is a join *for those upstreams only* (BPMN
inclusive join): their tokens wait until no active step can still deliver one, then the
step runs once. A token from any other upstream (one that is an ancestor of another
upstream: sequential convergence) or along a back-edge runs the step on its own.
The analysis walks only the ancestors of steps with two or more forward upstreams, so a
long chain costs nothing, and each input costs a dictionary look-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from ..dsl.models import Playbook, Step
from ..dsl.result_paths import result_paths
from ..tool_kinds import IN_WORKFLOW_KINDS

__all__ = ["StepGraph"]


def _iteration_paths(paths: Iterable[str]) -> set[str]:
    """What ``{{ each.results[0].count }}`` reads of an iteration's result: ``count``."""
    found = set()
    for path in paths:
        parts = path.split(".", 2)
        if len(parts) == 3 and parts[0] == "results" and parts[1].lstrip("-").isdigit():
            found.add(parts[2])
    return found


@dataclass
class StepGraph:
    playbook: Playbook
    entry: str
    # perf: reachability worked out pair by pair at every join arrival (the quadratic fan-out) — benchmark: benchmarks.engine_scale
    _reach_cache: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict, repr=False)
    _keep_cache: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict, repr=False)

    def analyse(self) -> StepGraph:
        """Compute the whole analysis now (it is otherwise computed on first use, inside the
        engine's first input): the shell does it once per playbook and shares the result
        between the executions of that playbook on a worker (``workflow/definitions.py``)."""
        for name in ("steps", "successors", "back_edges", "forward_upstreams", "join_upstreams",
                     "joins", "_inclusive_forward_successors", "result_paths", "loop_steps"):
            getattr(self, name)
        return self

    @cached_property
    def result_paths(self) -> dict[str, frozenset[str]]:
        """The fixed paths the templates read below each name (``dsl/result_paths.py``); none
        to look for when no task runs as an activity (only those store results by reference)."""
        if all(task.kind in IN_WORKFLOW_KINDS for step in self.playbook.workflow for task in step.tool):
            return {}
        return result_paths(self.playbook)

    @cached_property
    def loop_steps(self) -> frozenset[str]:
        """The steps with a ``loop:`` (their result holds their iterations' results)."""
        return frozenset(step.step for step in self.playbook.workflow if step.loop is not None)

    def kept_paths(self, step: str, task: str, names: tuple[str, ...], also: list[str] | None) -> tuple[str, ...]:
        """What the task ``task`` of ``step`` keeps of its result when it is stored by
        reference: the paths read below ``names`` (its step, its label, the names bound to
        its whole result: any may be how a template reaches it) and ``also`` (its
        ``spec.result.keep``)."""
        key = (step, task)
        kept = self._keep_cache.get(key)
        if kept is None:
            paths = self.result_paths
            named = {str(p) for p in also or ()}.union(*(paths.get(name, frozenset()) for name in names))
            if step in self.loop_steps:  # a task in a loop: its result is an iteration's
                named.update(_iteration_paths(paths.get(step, ())))
            # a routing guard reads the step's result as `outcome.result.x` / `output.data.x` too,
            # and a task's `set` and policy `then.set` its own result so (in a loop: the iteration's)
            for outer in ("output", "outcome"):
                read = {p.split(".", 1)[1] for p in paths.get(outer, ()) if p.startswith(("result.", "data."))}
                named.update(read)
                if step in self.loop_steps:
                    named.update(_iteration_paths(read))
            kept = self._keep_cache[key] = tuple(sorted(named))
        return kept

    @cached_property
    def steps(self) -> dict[str, Step]:
        """Steps by name. Kept here, on a plain object: the pydantic model's private
        attribute lookup costs more than the dict access on the engine's hot path."""
        return {step.step: step for step in self.playbook.workflow}

    @cached_property
    def successors(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for step in self.playbook.workflow:  # each target once, in arc order (a dict keeps it)
            out[step.step] = list(dict.fromkeys(arc.step for arc in (step.next.arcs if step.next else [])))
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
            for dst in targets:  # (targets are unique per step: each src once per dst)
                if dst in ups and (src, dst) not in self.back_edges:
                    ups[dst].append(src)
        return {k: tuple(v) for k, v in ups.items()}

    @cached_property
    def join_upstreams(self) -> dict[str, frozenset[str]]:
        """Join step -> its concurrent upstreams (only steps that have some)."""
        ancestors: dict[str, frozenset[str]] = {}
        out: dict[str, frozenset[str]] = {}
        for name, ups in self.forward_upstreams.items():
            if len(ups) < 2:
                continue
            for up in ups:
                if up not in ancestors:
                    ancestors[up] = self._forward_ancestors(up)
            # Only two upstreams below a common inclusive router can be concurrent; and one
            # concurrent partner is enough. Comparing every pair made a 2,000-way join cost
            # seconds inside one workflow activation.
            routers = {u: self._inclusive_forward_successors.keys() & ancestors[u] for u in ups}
            concurrent = {u for u in ups if routers[u] and any(
                u != v and not routers[u].isdisjoint(routers[v])
                and self._concurrent(ancestors[u], ancestors[v], u, v) for v in ups)}
            if concurrent:
                out[name] = frozenset(concurrent)
        return out

    @cached_property
    def joins(self) -> frozenset[str]:
        return frozenset(self.join_upstreams)

    @cached_property
    def _inclusive_forward_successors(self) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}
        for step in self.playbook.workflow:
            if step.next is not None and step.next.spec.mode == "inclusive":
                out[step.step] = frozenset(t for t in self.successors.get(step.step, [])
                                           if (step.step, t) not in self.back_edges)
        return out

    def _forward_ancestors(self, start: str) -> frozenset[str]:
        """``start`` and every step with a forward path to it."""
        seen = {start}
        todo = [start]
        while todo:
            for up in self.forward_upstreams.get(todo.pop(), ()):
                if up not in seen:
                    seen.add(up)
                    todo.append(up)
        return frozenset(seen)

    def _concurrent(self, anc_u: frozenset[str], anc_v: frozenset[str], u: str, v: str) -> bool:
        """Can ``u`` and ``v`` hold tokens at the same time? Neither precedes the other, and
        an inclusive router sends tokens towards them through two different arcs."""
        if u in anc_v or v in anc_u:
            return False
        for router, succ in self._inclusive_forward_successors.items():
            if router in anc_u and router in anc_v:
                to_u, to_v = succ & anc_u, succ & anc_v
                if to_u and to_v and len(to_u | to_v) >= 2:
                    return True
        return False

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

    def can_still_deliver(self, join: str, active_steps: Iterable[str]) -> bool:
        """True while some active step may still produce a token for ``join`` via one of its
        concurrent upstreams."""
        upstreams = self.join_upstreams.get(join, frozenset())
        for active in active_steps:
            if active != join and not upstreams.isdisjoint(self.reachable_avoiding(active, join)):
                return True
        return False
