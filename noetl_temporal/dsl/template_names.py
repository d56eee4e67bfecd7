"""Template names that can never resolve, found before anything runs (warnings).

* NTL702: a top-level name no part of the playbook defines: not a step, a task label, a
  workload key, an arc ``args`` key, a loop iterator, a ``set:`` name, nor a name the
  runtime always provides (``workload``, ``ctx``, ``iter``, ``args`` ... ``now()``).
* NTL705: ``workload.key`` where the playbook's ``workload:`` mapping has no such key.
* NTL703: ``step.field`` where the step's result is known before the run (a single
  ``noop`` task outside a loop: its literal ``result``, or its ``input``/``args`` keys, or
  nothing) and has no such field.

Both are warnings, not errors: a run's payload may bring workload keys the file does not
declare. Reads that ask whether a value exists (``| default(...)``, ``is defined``) are
not reported: they are how a playbook says a value is optional. The set of names is the
whole playbook's (not each template's scope): a report means no scope has the name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import Environment, nodes
from jinja2.defaults import DEFAULT_NAMESPACE
from jinja2.exceptions import TemplateSyntaxError

from ..templates import is_template
from . import paths
from .diagnostics import Reporter, did_you_mean
from .models import Playbook, Step
from .template_scan import expressions, parse_expression

__all__ = ["check_template_names", "RUNTIME_NAMES"]

#: names every template may read (engine/context.py's reserved names, the keychain the
#: activity renders, the replay-safe functions, Jinja's globals)
RUNTIME_NAMES: frozenset[str] = frozenset({
    "workload", "ctx", "iter", "args", "execution_id", "execution_number", "spec", "event", "output", "outcome",
    "_prev", "_task", "_attempt", "_idempotency_key", "keychain", "now", "uuid", "random_choice", *DEFAULT_NAMESPACE,
})
#: filters and tests that ask whether a value exists: reads under them are deliberate
_GUARD_FILTERS = frozenset({"default", "d"})
_GUARD_TESTS = frozenset({"defined", "undefined", "none"})
_SECTIONS = ("workflow", "workbook")
_PARSER = Environment()  # syntax only: the sandbox's filters and limits do not change parsing


def _other_names(playbook: Playbook, raw: Mapping[str, Any]) -> set[str]:
    """Names the playbook defines that are not step names (a step's own task label aside)."""
    names: set[str] = set()
    workload = raw.get("workload")
    if isinstance(workload, Mapping):
        names.update(str(k) for k in workload)
    for step in playbook.workflow:
        names.update(step.set_vars)
        if step.loop is not None:
            names.add(step.loop.iterator)
        for task in step.tool:
            if task.name != step.step:
                names.add(task.name)
            names.update(k.split(".")[0] for k in task.set_vars)
            for rule in task.spec.policy.rules if task.spec.policy else []:
                names.update(k.split(".")[0] for k in rule.then.set_vars)
        for arc in step.next.arcs if step.next else []:
            names.update(arc.args)
            names.update(k.split(".")[0] for k in arc.set_vars)
    return names


def _known_fields(step: Step, executor: Mapping[str, Any]) -> set[str] | None:
    """The fields of a step's result when they are certain before the run, else None."""
    if step.loop is not None or len(step.tool) != 1 or step.tool[0].kind != "noop":
        return None
    task = step.tool[0]
    # the spec models are dumped only here, for the few steps this can apply to
    if any(isinstance(layer.get("noop"), Mapping)
           for layer in (executor, step.spec.model_dump(), task.spec.model_dump())):
        return None  # a `spec.noop:` default may supply the result
    config = task.config
    if "result" in config:  # the inline result, as engine/pipeline.py's _inline_outcome gives it
        result = config["result"]
        if isinstance(result, Mapping):
            return set(map(str, result))
        return set() if result is None else None
    merged: set[str] = set()
    for value in (step.input, config.get("input"), config.get("args")):
        if isinstance(value, Mapping):
            merged.update(map(str, value))
        elif value is not None:
            return None  # a template that renders the whole mapping
    return merged  # empty: the result is null


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    # paths are joined only for templates and containers (most strings are neither)
    stack: list[tuple[Any, str, str | int | None]] = [(value, where, None)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, str):
            if is_template(item):
                yield item, parent if key is None else paths.join(parent, key)
            continue
        at = parent if key is None else paths.join(parent, key)
        if isinstance(item, Mapping):
            stack.extend((v, at, k) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, at, i) for i, v in reversed(list(enumerate(item))))


def _reads(text: str) -> list[tuple[str, str | None]]:
    """``(name, field)`` for each read of a context name (field: ``name.field``), leaving out
    what the template also reads under a guard: every read of ``x`` after ``x | default`` or
    ``x is defined``, the reads of ``x.f`` after ``x.f | default`` (``workload.other |
    default(1)`` makes only ``other`` optional, not every workload key)."""
    parts = expressions(text)
    reads = _whole_reads(text) if parts is None else _parts_reads(parts)
    if reads is None:
        return []  # NTL701 reports it
    optional = {(name, field) for name, field, guarded in reads if guarded}
    return list(dict.fromkeys((name, field) for name, field, _ in reads
                              if (name, None) not in optional and (name, field) not in optional))


_Read = tuple[str, str | None, bool]


def _whole_reads(text: str) -> list[_Read] | None:
    """The reads of a template parsed whole (statements may bind names of their own)."""
    try:
        tree = _PARSER.parse(text)
    except TemplateSyntaxError:
        return None
    local: set[str] = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    return list(_walk(tree, local, guarded=False))


def _parts_reads(parts: tuple[str, ...]) -> list[_Read] | None:
    """The reads of a template made of expressions only (which bind no names)."""
    reads: list[_Read] = []
    for part in parts:
        found = _expression_reads(part)
        if found is None:
            return None
        reads.extend(found)
    return reads


def _expression_reads(expr: str) -> tuple[_Read, ...] | None:
    return _reads_cached(expr) if len(expr) <= 4096 else _expression_reads_now(expr)


def _expression_reads_now(expr: str) -> tuple[_Read, ...] | None:
    tree = parse_expression(expr)
    return None if tree is None else tuple(_walk(tree, set(), guarded=False))


# perf: walking the same expression's parse again for the names it reads — benchmark: probes.validate_speed
_reads_cached = lru_cache(maxsize=16384)(_expression_reads_now)  # long ones are not kept


def _walk(node: nodes.Node, local: set[str], *,
          guarded: bool) -> Iterator[tuple[str, str | None, bool]]:
    if isinstance(node, nodes.Filter) and node.name in _GUARD_FILTERS or \
            isinstance(node, nodes.Test) and node.name in _GUARD_TESTS:
        guarded_child = node.node
    else:
        guarded_child = None
    if isinstance(node, nodes.Getattr | nodes.Getitem) and isinstance(node.node, nodes.Name) \
            and node.node.ctx == "load" and node.node.name not in local:
        field = node.attr if isinstance(node, nodes.Getattr) else \
            node.arg.value if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) else None
        yield node.node.name, field, guarded
        return
    if isinstance(node, nodes.Name) and node.ctx == "load" and node.name not in local:
        yield node.name, None, guarded
        return
    for child in node.iter_child_nodes():
        yield from _walk(child, local, guarded=guarded or child is guarded_child)


def _section_templates(raw: Mapping[str, Any], section: str,
                       templates: list[tuple[str, str]] | None) -> Iterator[tuple[str, str]]:
    """(text, path) of the section's templates: from the parser's list when there is one."""
    if templates is None:
        yield from _strings(raw.get(section), section)
        return
    size = len(section)
    for where, text in templates:
        if where.startswith(section) and where[size:size + 1] in ("", ".", "["):
            yield text, where


def check_template_names(raw: Mapping[str, Any], playbook: Playbook, reporter: Reporter,
                         templates: list[tuple[str, str]] | None = None) -> None:
    steps = {s.step for s in playbook.workflow}
    others = _other_names(playbook, raw)
    defined = steps | others | RUNTIME_NAMES
    executor = playbook.executor.spec.model_dump()
    # a step name that also names something else (a workload key, an arg ...) may not be the step
    fields = {s.step: _known_fields(s, executor)
              for s in playbook.workflow if s.step not in others}
    workload = raw.get("workload")
    # without a `workload:` mapping every key comes from the payload: nothing to check against
    workload_keys = set(map(str, workload)) if isinstance(workload, Mapping) else None
    for section in _SECTIONS:
        for text, where in _section_templates(raw, section, templates):
            for name, field in _reads(text):
                if name not in defined:
                    reporter.add("NTL702", f"`{name}` in {text!r} names nothing this playbook defines"
                                           f"{did_you_mean(name, defined)}; it renders empty unless the "
                                           f"run's payload supplies it", where, value=True)
                elif field is not None and name == "workload":
                    _check_workload_key(reporter, field, workload_keys, text, where)
                elif field is not None:
                    _check_field(reporter, name, field, fields.get(name), text, where)


def _check_workload_key(reporter: Reporter, key: str, declared: set[str] | None, text: str,
                        where: str) -> None:
    if declared is None or key in declared:
        return
    reporter.add("NTL705", f"`workload.{key}` in {text!r}: the playbook's `workload:` has no key `{key}`"
                           f"{did_you_mean(key, declared)}; it renders empty unless the run's payload "
                           f"supplies it", where, value=True)


def _check_field(reporter: Reporter, step: str, field: str, known: set[str] | None, text: str,
                 where: str) -> None:
    if known is None or field in known:
        return
    has = f"has only {', '.join(f'`{f}`' for f in sorted(known))}" if known else "is null"
    reporter.add("NTL703", f"`{step}.{field}` in {text!r}: step {step!r} is a noop whose result {has}"
                           f"{did_you_mean(field, known)}", where, value=True)
