"""What a run would do, without running it: ``noetl-temporal run --dry-run``.

Read from the same :class:`~.model.GraphView` as the pictures (the engine's step graph
decides joins and back-edges), so the plan cannot disagree with the interpreter.
"""

from __future__ import annotations

from typing import Any

from .model import Edge, GraphView, Node

__all__ = ["plan", "plan_text"]


def plan(view: GraphView) -> dict[str, Any]:
    """The plan as JSON: the entry step, the final step, and every step with its arcs."""
    entry = next(n.name for n in view.nodes if n.entry)
    final = next((n.name for n in view.nodes if n.final), None)
    return {
        "playbook": view.name,
        "runs_first": entry,
        "final_step": final,
        "steps": [_step(node, [e for e in view.edges if e.source == node.name]) for node in view.nodes],
    }


def _step(node: Node, edges: list[Edge]) -> dict[str, Any]:
    loop = None
    if node.loop is not None:
        loop = {"over": node.loop.over, "iterator": node.loop.iterator, "mode": node.loop.mode,
                "max_in_flight": node.loop.max_in_flight}
    return {
        "step": node.name, "tools": list(node.kinds), "loop": loop, "join": node.join,
        "admit": node.admit, "next_mode": node.router,
        "next": [{"step": e.target, "when": e.label, "back": e.back} for e in edges],
    }


def plan_text(view: GraphView) -> str:
    """The plan for a person: what runs first, then one block per step in playbook order."""
    data = plan(view)
    lines = [f"plan for {data['playbook']} (dry run: nothing was started)",
             f"runs first: {data['runs_first']}"]
    if data["final_step"]:
        lines.append(f"runs last: {data['final_step']} (once all other work has ended)")
    lines.append(f"steps ({len(data['steps'])}):")
    for step in data["steps"]:
        lines.append(f"  {step['step']}: {' -> '.join(step['tools'])}{_extras(step)}")
        for arc in step["next"]:
            when = f" when {arc['when']}" if arc["when"] and arc["when"] != "else" else \
                (" otherwise" if arc["when"] == "else" else "")
            back = " (loops back)" if arc["back"] else ""
            lines.append(f"      next -> {arc['step']}{when}{back}")
        if not step["next"]:
            lines.append("      (ends its branch)")
    return "\n".join(lines) + "\n"


def _extras(step: dict[str, Any]) -> str:
    parts = []
    if step["loop"]:
        loop = step["loop"]
        limit = f", max {loop['max_in_flight']} in flight" if loop["max_in_flight"] else ""
        parts.append(f"loop {loop['iterator']} in {loop['over']} ({loop['mode']}{limit})")
    if step["join"]:
        parts.append("waits for all its inputs (join)")
    if step["admit"]:
        parts.append(step["admit"])
    if step["next_mode"]:
        parts.append(f"routes {step['next_mode']}")
    return f"  [{'; '.join(parts)}]" if parts else ""
