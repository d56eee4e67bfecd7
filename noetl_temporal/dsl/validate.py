"""Semantic checks on a model-valid playbook: names, references, scopes and reachability.

These are the mistakes a schema cannot see: an arc to a step that does not exist,
a ``jump`` to a label of another step, a ``max_in_flight`` Temporal cannot honour,
a step nothing routes to. They run on the :class:`~.models.Playbook` (types are
settled) and report through the origin map, so positions point into the source.
Deliberately *not* reported: ``set_ctx`` inside a parallel loop (allowed; the engine
applies each iteration's patch when that iteration completes) and an inclusive
fan-out without a join (each branch simply terminates).
"""

from __future__ import annotations

from ..templates import is_template
from . import paths
from .approve_check import check_approvals
from .diagnostics import Reporter, did_you_mean
from .models import MAX_IN_FLIGHT, Patches, Playbook, PolicyAction, Step
from .open_keys import check_open_keys
from .requires import check_requires
from .tool_check import check_required

__all__ = ["check_semantics", "MAX_IN_FLIGHT"]

_RETRY_KNOBS = ("attempts", "backoff", "delay", "max_delay")


def _guard(reporter: Reporter, when: str | None, path: str) -> None:
    if when is not None and not is_template(when):
        reporter.add_normalized("NTL408", f"`when: {when}` has no {{{{ }}}}, so it is a constant", path,
                                value=True, fix=f"write `when: \"{{{{ {when} }}}}\"`")


def _iter_patch(reporter: Reporter, patches: Patches, step: Step, path: str) -> None:
    if patches.set_iter and step.loop is None:
        first = next(iter(patches.set_iter))
        names = ", ".join(f"iter.{name}" for name in patches.set_iter)
        reporter.add_normalized("NTL602", f"`{names}` is set but step {step.step!r} has no loop",
                                paths.join(f"{path}.set_iter", first))


def _no_iteration(reporter: Reporter, patches: Patches, what: str, path: str) -> None:
    """A step's own ``set`` applies when the step run ends, after its iterations; an arc's
    when the step routes: neither has an iteration whose ``iter`` it could update, and the
    engine applies only their ``ctx`` patches. Refused rather than dropped."""
    if patches.set_iter:
        first = next(iter(patches.set_iter))
        reporter.add_normalized("NTL605", f"`iter.{first}` in {what} `set` has no iteration to update",
                                paths.join(f"{path}.set_iter", first))


def _action(reporter: Reporter, then: PolicyAction, labels: list[str], path: str) -> None:
    given = then.model_fields_set
    if then.do == "jump":
        if not then.to:
            reporter.add_normalized("NTL403", "`do: jump` has no `to`", path)
        elif then.to != "previous" and then.to not in labels:
            reporter.add_normalized("NTL402", f"`jump` to {then.to!r}, which is not a task of this step"
                                              f"{did_you_mean(then.to, labels)}; tasks: {', '.join(labels)}",
                                    f"{path}.to", value=True)
    elif "to" in given and then.to is not None:
        reporter.add_normalized("NTL405", f"`to` is ignored by `do: {then.do}`", f"{path}.to")
    if then.do != "retry":
        for knob in _RETRY_KNOBS:
            if knob in given:
                reporter.add_normalized("NTL404", f"`{knob}` is ignored by `do: {then.do}`", f"{path}.{knob}")


def _step(reporter: Reporter, step: Step, index: int, names: set[str], final: str | None) -> None:
    base = f"workflow[{index}]"
    labels = [t.name for t in step.tool]
    seen: set[str] = set()
    for j, task in enumerate(step.tool):
        tpath = f"{base}.tool[{j}]"
        if task.name in seen:
            reporter.add_normalized("NTL304", f"task label {task.name!r} is used twice in step {step.step!r}",
                                    f"{tpath}.name")
        seen.add(task.name)
        _iter_patch(reporter, task, step, tpath)
        rules = task.spec.policy.rules if task.spec.policy else []
        for k, rule in enumerate(rules):
            rpath = f"{tpath}.spec.policy.rules[{k}]"
            _guard(reporter, rule.when, f"{rpath}.when")
            _action(reporter, rule.then, labels, f"{rpath}.then")
            _iter_patch(reporter, rule.then, step, f"{rpath}.then")
    admit = step.spec.policy.admit if step.spec.policy else None
    for k, admit_rule in enumerate(admit.rules if admit else []):
        _guard(reporter, admit_rule.when, f"{base}.spec.policy.admit.rules[{k}].when")
    if step.loop is not None and "iterator" not in step.loop.model_fields_set:
        reporter.add_normalized("NTL604", f"the loop of step {step.step!r} has no `iterator`, so its item is "
                                          f"named `item` (`{{{{ item }}}}`, `{{{{ iter.item }}}}`)",
                                f"{base}.loop")
    in_flight = step.loop.spec.max_in_flight if step.loop is not None else None
    if isinstance(in_flight, int) and in_flight > MAX_IN_FLIGHT:  # a template is checked once rendered
        reporter.add_normalized("NTL601", f"`max_in_flight: {in_flight}` is above "
                                          f"{MAX_IN_FLIGHT}", f"{base}.loop.spec.max_in_flight", value=True)
    _no_iteration(reporter, step, "a step's", base)
    for k, arc in enumerate(step.next.arcs if step.next else []):
        apath = f"{base}.next.arcs[{k}]"
        if arc.step not in names:
            reporter.add_normalized("NTL502", f"arc to {arc.step!r}, which is not a step"
                                              f"{did_you_mean(arc.step, names)}", f"{apath}.step", value=True)
        elif arc.step == final:
            reporter.add_normalized("NTL506", f"arc to the final step {final!r}; it runs once after all other "
                                              f"work ends, so this token is absorbed", f"{apath}.step",
                                    value=True)
        _guard(reporter, arc.when, f"{apath}.when")
        _no_iteration(reporter, arc, "an arc's", apath)


def _reachable(playbook: Playbook, entry: str) -> set[str]:
    successors = {s.step: [a.step for a in (s.next.arcs if s.next else [])] for s in playbook.workflow}
    seen = {entry}
    todo = [entry]
    while todo:
        for nxt in successors.get(todo.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _forced_arcs(step: Step) -> list[tuple[int, str]]:
    """The arcs of ``step`` that always fire: with no ``when``, in inclusive mode; the first
    arc only, with no ``when``, in exclusive mode (an earlier guarded arc may win)."""
    if step.next is None or not step.next.arcs:
        return []
    arcs = list(enumerate(step.next.arcs))
    if step.next.spec.mode == "exclusive":
        arcs = arcs[:1]
    return [(k, arc.step) for k, arc in arcs if arc.when is None]


def _unconditional_cycles(playbook: Playbook, reporter: Reporter) -> None:
    """NTL508: steps that route to each other with arcs that always fire never end."""
    forced = {s.step: _forced_arcs(s) for s in playbook.workflow}
    if not any(forced.values()):   # every arc has a `when` (or there are none): no such cycle
        return
    index_of = {s.step: i for i, s in reversed(list(enumerate(playbook.workflow)))}
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    for root in (s.step for s in playbook.workflow):
        if root in state:
            continue
        path: list[str] = [root]
        stack = [iter(forced.get(root, []))]
        state[root] = 1
        while stack:
            edge = next(stack[-1], None)
            if edge is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            k, target = edge
            if state.get(target) == 1:   # back to a step on the path: a cycle
                cycle = path[path.index(target):] + [target]
                reporter.add_normalized(
                    "NTL508", f"the steps {' -> '.join(cycle)} route to each other with arcs that always "
                              "fire (no `when`): this cycle never ends", f"workflow[{index_of[path[-1]]}].next.arcs[{k}]")
            elif target not in state and target in index_of:
                state[target] = 1
                path.append(target)
                stack.append(iter(forced.get(target, [])))


def _converges(playbook: Playbook) -> bool:
    """Whether arcs from two different steps lead to one step (a join needs that): without,
    the graph analysis (and the engine's import) is skipped, a tenth of `validate` on a
    long chain of steps."""
    first_source: dict[str, str] = {}
    for step in playbook.workflow:
        for arc in step.next.arcs if step.next else []:
            if first_source.setdefault(arc.step, step.step) != step.step:
                return True
    return False


def _join_arg_collisions(playbook: Playbook, entry: str, reporter: Reporter) -> None:
    """NTL507: arcs from concurrent upstreams of a join that set the same ``args`` key.

    Only real joins (``StepGraph.join_upstreams``): a step reached sequentially runs once
    per token, so equal keys there never meet. Equal constants are no conflict.
    """
    if not _converges(playbook):   # no step has two upstreams, so none is a join
        return
    from ..engine.graph import StepGraph  # the engine's rule, so validate and runs agree

    joins = StepGraph(playbook, entry).join_upstreams
    if not joins:
        return
    seen: dict[tuple[str, str], tuple[str, object]] = {}   # (join, key) -> (upstream, value)
    for index, step in enumerate(playbook.workflow):
        for k, arc in enumerate(step.next.arcs if step.next else []):
            if step.step not in joins.get(arc.step, ()):
                continue
            for key, value in (arc.args or {}).items():
                first = seen.setdefault((arc.step, key), (step.step, value))
                if first[0] == step.step or (first[1] == value and not is_template(value)):
                    continue
                reporter.add_normalized(
                    "NTL507", f"arcs from {first[0]!r} and {step.step!r} into the join {arc.step!r} both set "
                              f"`args.{key}`; at the join the later arrival wins (both stay readable as "
                              f"`args._upstreams.<step>.{key}`)",
                    paths.join(f"workflow[{index}].next.arcs[{k}].args", key))


def check_semantics(playbook: Playbook, reporter: Reporter) -> None:
    first_at: dict[str, int] = {}
    for index, step in enumerate(playbook.workflow):
        if step.step in first_at:
            reporter.add_normalized("NTL202", f"step name {step.step!r} is also used by "
                                              f"workflow[{first_at[step.step]}]", f"workflow[{index}].step",
                                    value=True)
        else:
            first_at[step.step] = index
    names = set(first_at)
    spec = playbook.executor.spec
    for field, code in (("entry_step", "NTL503"), ("final_step", "NTL504")):
        value = getattr(spec, field)
        if value is not None and value not in names:
            reporter.add_normalized(code, f"`{field}: {value}` names no step{did_you_mean(value, names)}",
                                    f"executor.spec.{field}", value=True)
    final = spec.final_step if spec.final_step in names else None
    for index, step in enumerate(playbook.workflow):
        _step(reporter, step, index, names, final)
    check_required(playbook, reporter)
    check_approvals(playbook, reporter)
    check_open_keys(playbook, reporter)
    check_requires(playbook, reporter)
    entry = spec.entry_step if spec.entry_step in names else playbook.workflow[0].step
    reachable = _reachable(playbook, entry) | ({final} if final else set())
    _join_arg_collisions(playbook, entry, reporter)
    _unconditional_cycles(playbook, reporter)
    for index, step in enumerate(playbook.workflow):
        if step.step not in reachable and first_at.get(step.step) == index:
            reporter.add_normalized("NTL505", f"step {step.step!r} can never run: no arc leads to it from the "
                                              f"entry step {entry!r}", f"workflow[{index}]")
