"""Jinja2 templates for playbooks: sandboxed, deterministic, native-typed.

* ``ImmutableSandboxedEnvironment``: playbooks cannot reach Python internals or
  mutate the context they are given.
* A string that is exactly one ``{{ expr }}`` yields the expression's native value
  (list, int, bool, dict, None); any other string renders to text.
* A value printed inside text is written as NoETL writes it (``true``, ``null``, JSON for
  lists and mappings: :mod:`.text`); executions started before that print
  Python's ``str()`` in the workflow.
* Dotted access prefers mapping keys over attributes, so ``{{ workload.items }}`` is
  the user's ``items`` value and not ``dict.items`` (stock Jinja2 gets this wrong).
* Nothing here reads a clock, randomness or the environment: ``now()`` and the
  ``random`` filter come from the caller (the workflow passes ``workflow.now()`` and a
  seed), so rendering is replay-safe. ``lipsum`` is removed.

This module is passed through the Temporal workflow sandbox (with jinja2 and
markupsafe), so it must stay free of I/O and global mutable state other than the
compiled-template cache, which is a pure function of the template text.
"""

from __future__ import annotations

import base64
import contextlib
import json
import random as _random
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from jinja2 import ChainableUndefined, Template, nodes
from jinja2.compiler import CodeGenerator
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..errors import ResultFieldUnavailable, TemplateError
from . import limits, undefined
from . import text as text_style
from .text import HeldPart

__all__ = [
    "HeldPart",
    "render",
    "render_value",
    "evaluate_condition",
    "check_syntax",
    "referenced_names",
    "operations_in",
    "operations_in_tree",
    "reads_name",
    "is_template",
    "TemplateError",
    "NeedsIsolation",
    "small_inputs_only",
    "GATED_FILTERS",
]

_SINGLE_EXPR = re.compile(r"^\s*\{\{(?P<expr>.*)\}\}\s*$", re.DOTALL)


class _Undefined(ChainableUndefined):
    """Missing names render as empty / ``None`` and chain (``a.b.c`` of nothing is nothing).

    Comparisons and arithmetic on an undefined value still raise, so a guard such as
    ``{{ ctx.row_count > 0 }}`` on a missing value is *not matched* (see
    :func:`evaluate_condition`) instead of being silently true or false. Printing one
    is noticed (``templates.undefined``): recorded as a warning, or an error when strict.
    """

    def __str__(self) -> str:
        undefined.noticed(self._undefined_name)
        return super().__str__()


class _MethodUndefined(_Undefined):
    """A missing key that shares its name with a read-only mapping method.

    ``{{ ctx.items | default([]) }}`` on a ctx without ``items`` must be undefined (so
    ``default`` applies), yet ``{% for k, v in d.items() %}`` must still work: calling
    it calls the method.
    """

    __slots__ = ("_method",)

    def __init__(self, method: Any, name: str) -> None:
        super().__init__(name=name)
        self._method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._method(*args, **kwargs)


_READ_ONLY_MAPPING_METHODS = frozenset({"items", "keys", "values", "get"})


class _Template(Template):
    def new_context(self, *args: Any, **kwargs: Any) -> Any:
        limits.start()  # every render (text or expression) starts with a fresh work budget
        return super().new_context(*args, **kwargs)


class _CodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Any = None) -> None:
        super().visit_Template(node, frame)
        # Output buffers (macros, set blocks, filter blocks) and `~` join through the size limit.
        self.writeline("concat = str_join = environment.checked_join")
        for op in limits.COMPARE_ONE:   # module-level names: a comparison is one global lookup and a call
            self.writeline(f"noetl_cmp_{op} = environment.compare_one[{op!r}]")

    def visit_Getitem(self, node: nodes.Getitem, frame: Any) -> None:
        # Jinja writes a slice as Python's `a[i:j]`, past the sandbox: ours is paid and sized.
        if not isinstance(node.arg, nodes.Slice):
            super().visit_Getitem(node, frame)
            return
        self.write("environment.sliced(")
        self.visit(node.node, frame)
        for part in (node.arg.start, node.arg.stop, node.arg.step):
            self.write(", ")
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
        self.write(")")

    def visit_Compare(self, node: nodes.Compare, frame: Any) -> None:
        # Comparisons go through the environment, which pays for what they read (Jinja's
        # sandbox intercepts arithmetic only: `==` of two 9 MB strings was free).
        if len(node.ops) == 1:
            self.write(f"noetl_cmp_{node.ops[0].op}(")
            self.visit(node.expr, frame)
            self.write(", ")
            self.visit(node.ops[0].expr, frame)
            self.write(")")
            return
        self.write("environment.compare(")
        self.visit(node.expr, frame)
        for operand in node.ops:
            self.write(f", {operand.op!r}, ")
            self.visit(operand.expr, frame)
        self.write(")")


class _Environment(ImmutableSandboxedEnvironment):
    """Mapping keys first, and the work/size limits of :mod:`.limits`."""

    template_class = _Template
    code_generator_class = _CodeGenerator
    # '-' only for its result: an integer one bit past MAX_INT_BITS (see call_binop)
    intercepted_binops = frozenset({"*", "**", "+", "-", "%"})
    concat = staticmethod(limits.checked_join)
    checked_join = staticmethod(limits.checked_join)
    compare = staticmethod(limits.compare)
    compare_one = limits.COMPARE_ONE
    sliced = staticmethod(limits.sliced)

    def _generate(self, source: Any, *args: Any, **kwargs: Any) -> Any:
        return super()._generate(limits.meter_loops(source), *args, **kwargs)

    def compile_expression(self, source: str, undefined_to_none: bool = True) -> Any:
        expression = super().compile_expression(source, undefined_to_none)

        def evaluate(*args: Any, **kwargs: Any) -> Any:  # a value built by the template: size-checked
            return limits.check_result(expression(*args, **kwargs))

        return evaluate

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        limits.check_binop(operator, left, right)
        return limits.check_int(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        args = limits.check_call(__obj, args, kwargs)
        if isinstance(__obj, LoopContext) and args:  # a recursive loop's next level is metered too
            args = (limits.metered(args[0]), *args[1:])
        return limits.check_called(__obj, super().call(__context, __obj, *args, **kwargs))

    def getitem(self, obj: Any, argument: Any) -> Any:
        if type(argument) is slice:   # a slice copies: paid and size-checked
            limits.check_slice(obj, argument)
        return super().getitem(obj, argument)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
        # Stock Jinja returns an undefined that our chainable undefined would print as "":
        # an escape attempt fails loudly instead of rendering nothing.
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")

    def getattr(self, obj: Any, attribute: str) -> Any:  # mapping keys first
        if isinstance(obj, Mapping):
            try:
                return obj[attribute]
            except (KeyError, TypeError):
                pass
            if attribute in _READ_ONLY_MAPPING_METHODS:
                return _MethodUndefined(getattr(obj, attribute), attribute)
        return super().getattr(obj, attribute)


def _fromjson(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _b64encode(value: Any) -> str:
    data = value.encode() if isinstance(value, str) else bytes(value)
    return base64.b64encode(data).decode()


def _b64decode(value: Any) -> str:
    return base64.b64decode(value).decode()


def _noetl_finalize(value: Any) -> Any:
    return text_style.as_text(limits.check_nested(value))


def _json_default(value: Any) -> Any:
    # a stored result (or a loop's results holding some) dumps as what text prints for it
    return value.in_text() if isinstance(value, HeldPart) else str(value)


#: The filters whose cost grows faster than their input (``dsl/template_ops.py``'s task-only
#: rows; a test keeps the two equal): rendered outside a child only under a budget.
GATED_FILTERS = frozenset({"urlize", "striptags", "wordwrap", "pprint"})
# The squared input sizes a render may still spend on them in this process (None: no gate).
_GATE: ContextVar[list[int] | None] = ContextVar("gated_filter_budget", default=None)


class NeedsIsolation(TemplateError):
    """A gated filter's input is past what :func:`small_inputs_only` allows in this process:
    render the template in a render child instead (docs/durability.md, "Task-side renders")."""


@contextlib.contextmanager
def small_inputs_only(budget: int) -> Iterator[None]:
    """Renders in here may call the gated filters on inputs whose squared sizes (characters,
    or items, of the value and its arguments) add up to at most ``budget`` (their cost is at
    worst quadratic in it, so this bounds their time and output before they run); past it
    they raise :class:`NeedsIsolation`."""
    token = _GATE.set([budget])
    try:
        yield
    finally:
        _GATE.reset(token)


def _gated(func: Callable[..., Any]) -> Callable[..., Any]:
    # a pass_context / pass_eval_context filter gets Jinja's context first, then its input
    at = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    def gated(*args: Any, **kwargs: Any) -> Any:
        left = _GATE.get()
        if left is not None:
            # the input and every argument: a small text linked with a 9 MB ``target`` is large
            size = sum(limits.weight(a, 1 << 20, paid=False) for a in (*args[at:], *kwargs.values()))
            left[0] -= size * size
            if left[0] < 0:
                raise NeedsIsolation("a task-only filter's input is too large to render here")
        return func(*args, **kwargs)

    if at:
        gated.jinja_pass_arg = func.jinja_pass_arg  # type: ignore[attr-defined]
    return gated


def _make_env(finalize: Callable[[Any], Any]) -> _Environment:
    env = _Environment(undefined=_Undefined, autoescape=False, keep_trailing_newline=True,
                       finalize=finalize)
    env.globals.pop("lipsum", None)
    env.filters["fromjson"] = _fromjson
    env.filters["from_json"] = _fromjson
    env.filters["to_json"] = lambda v: json.dumps(v, default=_json_default)
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, default=_json_default, indent=indent)
    env.filters["b64encode"] = _b64encode
    env.filters["b64decode"] = _b64decode
    # Replaced per render with a seeded generator (see _globals_for); never the process RNG.
    env.filters.pop("random", None)
    limits.guard_filters(env.filters)
    limits.guard_tests(env.tests)
    for name in GATED_FILTERS:   # outermost: the gate is asked before anything runs
        env.filters[name] = _gated(env.filters[name])
    return env


_ENV = _make_env(_noetl_finalize)
# Prints Python's str(): the workflow side of executions started before behaviours.NOETL_TEXT.
_PYTHON_TEXT_ENV = _make_env(limits.check_nested)


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


# perf: a Jinja compile per render of the same expression — benchmark: probes.workflow_cpu
@lru_cache(maxsize=4096)
def _compile_expr(expr: str):
    return _ENV.compile_expression(expr, undefined_to_none=False)


@lru_cache(maxsize=4096)
def _compile_template(text: str, noetl_text: bool = True):
    return (_ENV if noetl_text else _PYTHON_TEXT_ENV).from_string(text)


def _single_expression(text: str) -> str | None:
    m = _SINGLE_EXPR.match(text)
    if not m:
        return None
    expr = m.group("expr")
    # "{{ a }} and {{ b }}" also matches the regex: it is mixed text, not one expression.
    if "{{" in expr or "}}" in expr or "{%" in expr:
        return None
    return expr


# perf: a Jinja render for a template that is one name (`{{ i }}`) — benchmark: probes.workflow_cpu
@lru_cache(maxsize=4096)
def _bare_name(expr: str) -> str | None:
    """The name an expression is made of alone (``i`` of ``{{ i }}``), else None. Only a name
    the template reads (``_names_in``) is in a render's scope: ``true``, ``none`` and the
    like are constants to Jinja, never looked up."""
    name = expr.strip()
    # (``self`` is not looked up either: Jinja's call takes it as its own argument.)
    return name if name.isidentifier() and name != "self" else None


def _native(value: Any) -> Any:
    if isinstance(value, ChainableUndefined):
        undefined.noticed(value._undefined_name)
        return None
    if isinstance(value, HeldPart):
        return value.as_value()
    if isinstance(value, (list, tuple, dict)) and _holds_undefined(value):
        # `{{ {'a': x.missing} }}`: an Undefined left inside a list or dict cannot be encoded
        # for Temporal (the workflow task would fail again and again); it is None, as at the top.
        return _without_undefined(value)
    return value


def _holds_undefined(value: Any) -> bool:
    """Whether an Undefined sits anywhere inside (each container looked at once)."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, ChainableUndefined | HeldPart):
                return True
            if isinstance(child, (list, tuple, dict)):
                stack.append(child)
    return False


def _without_undefined(value: Any) -> Any:
    if isinstance(value, ChainableUndefined):
        undefined.noticed(value._undefined_name)
        return None
    if isinstance(value, HeldPart):
        return value.as_value()
    if isinstance(value, dict):
        return {key: _without_undefined(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_undefined(child) for child in value]
    return value


class _Seeded:
    """A ``random`` filter and ``now()`` global that depend only on their inputs."""

    def __init__(self, seed: int | str | None, now: Callable[[], Any] | None) -> None:
        self._rng = _random.Random(seed if seed is not None else 0)  # deterministic: seeded
        self._now = now

    def choice(self, seq: Any) -> Any:
        seq = list(seq)
        return self._rng.choice(seq) if seq else None

    def now(self) -> Any:
        if self._now is None:
            raise TemplateError("now() is not available here")
        return self._now()


def _scope_for(text: str, context: Mapping[str, Any], seed: Any,
               now: Callable[[], Any] | None) -> dict[str, Any]:
    """Only the names the template reads: the caller's context may be a large lazy view
    (every step result is a bare name), and copying all of it per render was the cost."""
    scope: dict[str, Any] = {}
    runtime: _Seeded | None = None
    for name in _names_in(text):
        if name in context:
            scope[name] = context[name]
        elif name in ("now", "random_choice"):
            runtime = runtime or _Seeded(seed, now)
            scope[name] = runtime.now if name == "now" else runtime.choice
    return scope


def render(text: str, context: Mapping[str, Any], *, where: str | None = None,
           seed: Any = None, now: Callable[[], Any] | None = None) -> Any:
    """Render one string. A single ``{{ expr }}`` returns the native value."""
    if not is_template(text):
        return text
    undefined.current(text, where)
    try:
        expr = _single_expression(text)
        ctx = _scope_for(text, context, seed, now)
        if expr is not None:
            name = _bare_name(expr)
            if name is not None and name in ctx:
                # ``{{ i }}``: Jinja would return the context's value as it is; set up no
                # render for it (a loop renders its item this way once per item).
                limits.start()
                return _native(limits.check_result(ctx[name]))
            return _native(_compile_expr(expr)(**ctx))
        return _compile_template(text, text_style.noetl_text_on()).render(**ctx)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error: {exc.message}", template=text, where=where,
                            fix="correct the Jinja2 expression") from None
    except UndefinedError as exc:
        raise TemplateError(f"undefined value: {exc.message}", template=text, where=where,
                            fix="check the variable name, or guard it with | default(...)") from None
    except SecurityError as exc:
        raise TemplateError(f"not allowed in playbook templates: {exc}", template=text,
                            where=where) from None
    except ResultFieldUnavailable as exc:
        if exc.where is not None:  # already located (a nested render)
            raise
        raise ResultFieldUnavailable(exc.message, template=text, where=where, fix=exc.fix) from None
    except TemplateError:
        raise
    except Exception as exc:  # any error inside the expression: type errors, zero division ...
        raise TemplateError(f"{type(exc).__name__}: {exc}", template=text, where=where) from None


def render_value(value: Any, context: Mapping[str, Any], *, where: str | None = None,
                 seed: Any = None, now: Callable[[], Any] | None = None,
                 defer: Callable[[str], bool] | None = None) -> Any:
    """Render every string inside ``value`` (dicts and lists recursively); keys stay as they are.

    ``defer(text)`` true leaves that string as it is (rendered later, elsewhere). What all
    the templates build together is bounded (``templates.limits.MAX_VALUE_SIZE``).
    """
    return _render_tree(value, context, where, seed, now, defer, limits.ValueBudget())


def _render_tree(value: Any, context: Mapping[str, Any], where: str | None, seed: Any,
                 now: Callable[[], Any] | None, defer: Callable[[str], bool] | None,
                 budget: limits.ValueBudget) -> Any:
    if isinstance(value, str):
        if (defer is not None and defer(value)) or not is_template(value):
            return value
        rendered = render(value, context, where=where, seed=seed, now=now)
        try:
            return budget.add(rendered)
        except limits.LimitExceeded as exc:
            raise TemplateError(f"not allowed in playbook templates: {exc}", template=value, where=where) from None
    if isinstance(value, Mapping):
        return {k: _render_tree(v, context, f"{where}.{k}" if where else str(k), seed, now, defer, budget)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render_tree(v, context, f"{where}[{i}]" if where else f"[{i}]", seed, now, defer, budget)
                for i, v in enumerate(value)]
    return value


def reads_name(name: str) -> Callable[[str], bool]:
    """A ``defer`` predicate: the template reads the top-level ``name``."""

    def predicate(text: str) -> bool:
        return is_template(text) and name in text and name in _names_in(text)

    return predicate


def truthy(value: Any) -> bool:
    """How a rendered guard counts: strings 'false'/'0'/'no'/'' are false, as users expect."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0", "no", "none", "null", "off")
    return bool(value)


def evaluate_condition(when: Any, context: Mapping[str, Any], *, where: str | None = None,
                       seed: Any = None, now: Callable[[], Any] | None = None) -> tuple[bool, str | None]:
    """Evaluate a guard. Returns ``(matched, error)``.

    A guard that raises (for example a comparison on an undefined value) does not match,
    and the error text is returned so the caller can record it in its decision event;
    except ``ResultFieldUnavailable`` (a part of a stored result the workflow does not
    hold), which is raised: reading it as "no match" would take another arc silently.
    ``None`` (no ``when``) always matches.
    """
    if when is None:
        return True, None
    if isinstance(when, bool):
        return when, None
    try:
        return truthy(render(str(when), context, where=where, seed=seed, now=now)), None
    except ResultFieldUnavailable:
        raise  # never "does not match": the caller fails the step (engine/routing.py)
    except TemplateError as exc:
        return False, str(exc)


def check_syntax(text: str) -> str | None:
    """Return the syntax error message of a template, or None when it parses."""
    if not is_template(text):
        return None
    try:
        expr = _single_expression(text)
        if expr is not None:
            _ENV.parse("{{" + expr + "}}")
        else:
            _ENV.parse(text)
    except TemplateSyntaxError as exc:
        return f"{exc.message} (line {exc.lineno} of the template)"
    return None


@lru_cache(maxsize=4096)
def _names_in(text: str) -> frozenset[str]:
    try:
        ast = _ENV.parse(text)
    except TemplateSyntaxError:
        return frozenset()
    return frozenset(n.name for n in ast.find_all(nodes.Name) if n.ctx == "load")


# Filters that call another filter or test by name: which argument names it.
_BY_NAME = {"map": ("filter", 0), "select": ("test", 0), "reject": ("test", 0),
            "selectattr": ("test", 1), "rejectattr": ("test", 1)}


@lru_cache(maxsize=4096)
def operations_in(text: str) -> frozenset[tuple[str, str]]:
    """The filters and tests a template uses, as ``("filter", name)`` / ``("test", name)``,
    those it names to ``map``/``select``/``selectattr``... included (``map('urlize')``)."""
    try:
        ast = _ENV.parse(text)
    except TemplateSyntaxError:
        return frozenset()
    return operations_in_tree(ast)


def operations_in_tree(ast: nodes.Node) -> frozenset[tuple[str, str]]:
    """``operations_in`` of an already parsed template (dsl/template_scan parses each
    distinct expression of a large playbook once)."""
    found: set[tuple[str, str]] = set()
    for node in ast.find_all((nodes.Filter, nodes.Test)):
        found.add(("filter" if isinstance(node, nodes.Filter) else "test", node.name))
        by_name = _BY_NAME.get(node.name) if isinstance(node, nodes.Filter) else None
        if by_name is not None and len(node.args) > by_name[1]:
            named = node.args[by_name[1]]
            if isinstance(named, nodes.Const) and isinstance(named.value, str):
                found.add((by_name[0], named.value))
    return frozenset(found)


def referenced_names(value: Any) -> set[str]:
    """Top-level names a value's templates read (used to send activities only what they need)."""
    names: set[str] = set()
    if isinstance(value, str):
        if is_template(value):
            names |= _names_in(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            names |= referenced_names(v)
    elif isinstance(value, list | tuple):
        for v in value:
            names |= referenced_names(v)
    return names
