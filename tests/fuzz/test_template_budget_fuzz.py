"""Fuzz the template budgets (hypothesis): chains of filters over inputs of every size.

Templates render inside workflow activations, which Temporal's deadlock detector fails
after 2 s. Whatever chain of filters and sizes a playbook uses, a render must end (with its
value or with a clear ``TemplateError``) well inside that, and without eating the worker's
memory. The fuzzer runs in a child process under a memory cap, next to a process that keeps
one core busy (so the timings are taken under CPU load on top of whatever else the machine
runs), and checks the slowest renders it found, each timed again (the best of three).

The check is on the CPU time a render takes (``time.thread_time``): on a shared machine the
wall time of a 1 ms render can be a second of waiting for a core, which no budget can
prevent. Half the detector in CPU is the bound: about 0.4 s is measured with a core kept
busy, 0.2 s on an idle machine, and up to 0.78 s on a 2-core machine running several suites
at once (shared cores slow CPU time too); the rest is left for the scheduler.
"""

from __future__ import annotations

import gc
import multiprocessing
import resource
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noetl_temporal.errors import TemplateError
from noetl_temporal.templates import render

MEMORY_CAP = 1536 * 1024 * 1024   # address space the fuzzer may add to what it inherits
SAFE_FRACTION = 1.0     # CPU seconds under load: half the 2 s detector
EXAMPLES = 250

_SIZES = st.sampled_from([0, 1, 3, 100, 10_000, 99_999, 1_000_000, 9_999_999, 10**9])
_BASES = st.one_of(
    _SIZES.map(lambda n: f"range({min(n, 99_999)})"),
    _SIZES.map(lambda n: f"('x ' * {n})"),
    _SIZES.map(lambda n: f"([1, 'a'] * {n})"),
    st.sampled_from(["items", "rows", "text", "big", "[[1] * 100] * 3000", "[1, 2]", "'<\"a\\\\'"]),
)
_FILTERS = st.one_of(
    st.sampled_from(["list", "sort", "unique", "reverse", "join", "join(',')", "string", "tojson", "length",
                     "first", "sum", "max", "min", "title", "upper", "escape", "urlencode", "wordcount",
                     "map('string')", "map('upper')", "select", "reject", "dictsort", "groupby(0)",
                     "map(attribute='a')", "items", "trim", "striptags", "urlize", "capitalize", "pprint",
                     "b64encode", "indent", "center", "sum(start=[])"]),
    _SIZES.map(lambda n: f"batch({n}, 0)"),
    _SIZES.map(lambda n: f"batch({n})"),
    _SIZES.map(lambda n: f"slice({n})"),
    _SIZES.map(lambda n: f"wordwrap({max(n, 1)})"),
    _SIZES.map(lambda n: f"center({n})"),
    _SIZES.map(lambda n: f"indent({n})"),
    _SIZES.map(lambda n: f"replace('x', 'x' * {n})"),
    _SIZES.map(lambda n: f"format({n})"),
)
_SHAPES = st.sampled_from([
    "{{{{ {expr} }}}}",
    "{{{{ ({expr}) | list | length }}}}",
    "{{% for i in {expr} %}}{{{{ i }}}}{{% endfor %}}",
    "{{{{ {expr} }}}}{{{{ {expr} }}}}{{{{ {expr} }}}}",
    "{{{{ 10 ** {n} }}}}",
    "{{{{ '%s' % ({expr}) }}}}",
    "{{{{ ({expr}) * {n} }}}}",
])


@st.composite
def templates(draw):
    expr = draw(_BASES)
    for name in draw(st.lists(_FILTERS, min_size=1, max_size=3)):
        expr = f"{expr} | {name}"
    return draw(_SHAPES).format(expr=expr, n=draw(_SIZES))


CONTEXT = {"items": list(range(100_000)), "rows": [{"a": i, "b": str(i)} for i in range(100_000)],
           "text": "lorem ipsum <b>dolor</b> " * 200_000,
           "big": [f"{i:07d}" + "x" * 999_993 for i in range(100)]}   # 100 MB the template did not build


def _address_space() -> int:
    """This process's mapped address space now (what ``RLIMIT_AS`` counts)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _fuzz(conn) -> None:
    # The cap is headroom over what the fork inherited: a test process that has hosted
    # workers maps a lot already (threads' stacks and malloc arenas), and a fixed cap below
    # that left no room to grow the stack, which the kernel answers with SIGSEGV.
    cap = _address_space() + MEMORY_CAP
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    # What the fork inherited is the test suite's heap, not a render's: left to the
    # collector, every full collection a render triggers walks all of it (in a suite that
    # had hosted workers, 0.8-1.1 s charged to one render). A worker runs its full
    # collections between activations (hosting/full_collections.py), so the render's own cost is
    # what is measured here.
    gc.freeze()
    timings: list[tuple[float, str, str]] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(template=templates())
    def one(template: str) -> None:
        started, wall = time.thread_time(), time.perf_counter()
        try:
            render(template, CONTEXT, where="s.tool.cmd")
            outcome = "ok"
        except TemplateError as exc:
            outcome = str(exc)[:160]
            assert str(exc).startswith("s.tool.cmd: "), outcome   # located, never a raw exception
        timings.append((time.thread_time() - started, template, f"{outcome} (wall {time.perf_counter() - wall:.2f}s)"))

    try:
        one()
        conn.send(("done", _retimed(sorted(timings)[-5:]), len(timings)))
    except BaseException as exc:   # noqa: BLE001 - reported to the parent, which fails the test
        conn.send(("error", f"{type(exc).__name__}: {str(exc)[:2000]}", len(timings)))


def _retimed(slowest: list[tuple[float, str, str]]) -> list[tuple[float, str, str]]:
    """The slowest renders timed again, the best of three each, slowest last.

    One timing on a shared 2-core machine can be inflated several times over by the other
    processes on the same cores (caches, SMT siblings): a 0.2 s render was once measured
    at 1.45 s of CPU. A render that really costs too much costs it every time, so the
    best of three keeps what the check is for and drops what the neighbours added.
    """
    retimed = []
    for first, template, outcome in slowest:
        best = first
        for _ in range(2):
            started = time.thread_time()
            try:
                render(template, CONTEXT, where="s.tool.cmd")
            except TemplateError:
                pass
            best = min(best, time.thread_time() - started)
        retimed.append((best, template, f"{outcome}, first timing {first:.2f}s"))
    return sorted(retimed)


def _burn() -> None:
    while True:
        pass


def test_no_template_blocks_an_activation_or_eats_memory_under_load():
    ctx = multiprocessing.get_context("fork")
    burner = ctx.Process(target=_burn, daemon=True)
    burner.start()
    parent, child = ctx.Pipe()
    fuzzer = ctx.Process(target=_fuzz, args=(child,))
    try:
        fuzzer.start()
        child.close()   # the child's end lives in the child only: its death ends the wait
        assert parent.poll(600), "the fuzzer did not finish in 10 minutes"
        try:
            status, detail, count = parent.recv()
        except EOFError:
            fuzzer.join(10)
            raise AssertionError(f"the fuzzer died without a report (exit code {fuzzer.exitcode})") from None
    finally:
        burner.kill()
        fuzzer.join(10)
        if fuzzer.is_alive():
            fuzzer.kill()
    assert status == "done", detail
    assert count >= EXAMPLES // 2
    slowest = detail[-1]
    assert slowest[0] < SAFE_FRACTION, "\n".join(f"{t:.2f}s CPU {tpl} -> {out}" for t, tpl, out in detail)
