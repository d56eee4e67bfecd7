"""The workloads of issue 11, each defined once for both sides.

A :class:`Workload` carries the playbook (as a mapping, dumped to YAML and validated by
the real loader) and the hand-written workflow with its argument. The python task code
of every playbook is a text from ``bodies``, the same text the hand-written activities
compile, so both sides run identical bodies.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from . import bodies

__all__ = ["Workload", "workloads", "FAST_PATH_OPT_IN", "playbook_yaml", "SIZES", "QUICK_SIZES"]

# How a playbook opts in to the local-activity fast path: (where, value). ``where`` is
# ``executor.<path>`` (the playbook's executor block), ``step.<path>`` (every step) or
# ``task.<path>`` (every task's configuration); dots walk nested mappings. ``None``
# disables the fast-path workload (it reports n/a for the playbook).
FAST_PATH_OPT_IN: tuple[str, Any] | None = ("executor.spec.local", True)

# Issue 11's sizes (the sequential loop 100 items, was 200: on the stock server it is 50 ms an
# item whatever the side, and the whole run must fit in 10 minutes), and small ones for a
# smoke run (and for each workload's warm-up).
SIZES = {"chain": 20, "seq_loop": 100, "branches": 50, "par_loop": 1000, "in_flight": 50,
         "executions": 100, "chain_short": 5, "fast": 20, "blob": 1 << 20, "user_activity": 20}
QUICK_SIZES = {"chain": 5, "seq_loop": 10, "branches": 10, "par_loop": 50, "in_flight": 10,
               "executions": 10, "chain_short": 5, "fast": 5, "blob": 1 << 20, "user_activity": 5}

# ``--in-worker``: every python task of every playbook runs in the worker itself
# (docs/tools.md, "In-worker mode"): the same comparison without the python tool's process
# per task, to show how much of each ratio that isolation costs. Not the default.
IN_WORKER_OPT_IN: tuple[str, Any] = ("task.in_worker", True)

RETRY_POLICY = {"rules": [{"when": "{{ output.status == 'error' }}",
                           "then": {"do": "retry", "attempts": 5, "delay": 1}}]}


@dataclass(frozen=True)
class Workload:
    key: str                     # the name for ``--workloads``
    title: str                   # the table row
    playbook: dict[str, Any] | None  # None: the playbook side cannot run it (yet); reason in ``na``
    workflow: str                # the hand-written workflow's name
    arg: dict[str, Any]          # its argument
    executions: int = 1          # started at once, timed together
    tasks: int = 0               # python tasks per execution (fast-path check)
    fast_path: bool = False
    na: str | None = None
    # Fresh values per execution (e.g. the retry counter file): the playbook's payload and
    # merged into the hand-written argument. Called with a scratch directory.
    per_run: Callable[[Path], dict[str, Any]] | None = field(default=None, compare=False)
    # The playbook calls the hand-written activities (``kind: activity``) on its worker's own
    # queue, given to it as ``workload.queue``
    queue_in_payload: bool = False


def _task(body: str, **inputs: Any) -> dict[str, Any]:
    return {"kind": "python", "code": body, "input": inputs}


def _playbook(name: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "noetl.io/v2", "kind": "Playbook", "metadata": {"name": name}, "workflow": steps}


def _to(*names: str, inclusive: bool = False) -> dict[str, Any]:
    arcs = {"arcs": [{"step": n} for n in names]}
    return {"spec": {"mode": "inclusive"}, **arcs} if inclusive else arcs


def chain(n: int, name: str = "chain") -> dict[str, Any]:
    steps = []
    for k in range(n):
        step = {"step": f"s{k}", "tool": _task(bodies.STEP, i=0 if k == 0 else f"{{{{ s{k - 1}.i }}}}")}
        if k + 1 < n:
            step["next"] = _to(f"s{k + 1}")
        steps.append(step)
    return _playbook(f"bench_{name}_{n}", steps)


def user_activity_chain(n: int) -> dict[str, Any]:
    """``n`` steps of ``kind: activity``, each the hand-written ``bench.step`` activity fed
    the previous result: what ``BenchChain`` does, written as a playbook."""
    steps = []
    for k in range(n):
        args = {"i": 0 if k == 0 else f"{{{{ s{k - 1}.i }}}}"}
        step = {"step": f"s{k}", "tool": {"kind": "activity", "name": "bench.step",
                                          "task_queue": "{{ workload.queue }}", "args": [args]}}
        if k + 1 < n:
            step["next"] = _to(f"s{k + 1}")
        steps.append(step)
    return _playbook(f"bench_user_activity_{n}", steps)


def loop(n: int, max_in_flight: int | None = None) -> dict[str, Any]:
    spec = {"mode": "parallel", "max_in_flight": max_in_flight} if max_in_flight else {"mode": "sequential"}
    name = f"bench_par_loop_{n}_{max_in_flight}" if max_in_flight else f"bench_seq_loop_{n}"
    return _playbook(name, [{
        "step": "items",
        "loop": {"in": f"{{{{ range({n}) | list }}}}", "iterator": "i", "spec": spec},
        "tool": _task(bodies.STEP, i="{{ i }}"),
    }])


def branches(n: int) -> dict[str, Any]:
    names = [f"b{k}" for k in range(n)]
    steps = [{"step": "start", "tool": _task(bodies.STEP, i=0), "next": _to(*names, inclusive=True)}]
    steps += [{"step": b, "tool": _task(bodies.STEP, i=f"{{{{ start.i + {k} }}}}"), "next": _to("join")}
              for k, b in enumerate(names)]
    values = "{{ [" + ", ".join(f"{b}.i" for b in names) + "] }}"
    steps.append({"step": "join", "tool": _task(bodies.JOIN, values=values)})
    return _playbook(f"bench_branches_{n}", steps)


def handoff(size: int) -> dict[str, Any]:
    return _playbook("bench_handoff", [
        {"step": "produce", "tool": _task(bodies.PRODUCE, size=size), "next": _to("consume")},
        # The whole result: a large one travels as a reference that the activity resolves
        # before the tool runs (docs/tools.md, "Large results").
        {"step": "consume", "tool": _task(bodies.CONSUME, made="{{ produce }}")},
    ])


def retry() -> dict[str, Any]:
    task = _task(bodies.FLAKY, counter="{{ workload.counter }}")
    task["spec"] = {"policy": copy.deepcopy(RETRY_POLICY)}
    return _playbook("bench_retry", [{"step": "flaky", "tool": task}])


def with_opt_in(playbook: dict[str, Any], opt_in: tuple[str, Any]) -> dict[str, Any]:
    """A copy of ``playbook`` with the fast-path opt-in set where ``opt_in`` says."""
    where, value = opt_in
    level, _, path = where.partition(".")
    out = copy.deepcopy(playbook)
    if level == "executor":
        targets = [out.setdefault("executor", {})]
    elif level == "step":
        targets = out["workflow"]
    elif level == "task":
        targets = [s["tool"] for s in out["workflow"]]
    else:
        raise ValueError(f"FAST_PATH_OPT_IN must start with executor., step. or task., got {where!r}")
    keys = path.split(".")
    for target in targets:
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
    return out


def _counter(scratch: Path) -> dict[str, Any]:
    import uuid

    return {"counter": str(scratch / f"attempts-{uuid.uuid4().hex}")}


def workloads(sizes: dict[str, int] = SIZES, opt_in: tuple[str, Any] | None = FAST_PATH_OPT_IN,
              in_worker: bool = False) -> list[Workload]:
    defined = _workloads(sizes, opt_in)
    if not in_worker:
        return defined
    # (``user_activity`` has no python task: its activities run in the worker either way)
    return [w if w.playbook is None or w.queue_in_payload else replace(w, playbook=with_opt_in(w.playbook,
                                                                                              IN_WORKER_OPT_IN))
            for w in defined]


def _workloads(sizes: dict[str, int], opt_in: tuple[str, Any] | None) -> list[Workload]:
    n, loop_n, fan, par, gate = sizes["chain"], sizes["seq_loop"], sizes["branches"], sizes["par_loop"], sizes["in_flight"]
    many, short, fast, blob = sizes["executions"], sizes["chain_short"], sizes["fast"], sizes["blob"]
    user = sizes["user_activity"]
    fast_playbook = with_opt_in(chain(fast, "fast"), opt_in) if opt_in else None
    return [
        Workload("chain", f"{n} sequential python steps", chain(n), "BenchChain", {"n": n}, tasks=n),
        Workload("seq_loop", f"{loop_n}-item sequential loop", loop(loop_n), "BenchSequentialLoop",
                 {"n": loop_n}, tasks=loop_n),
        Workload("branches", f"{fan} parallel branches + join", branches(fan), "BenchBranches", {"n": fan},
                 tasks=fan + 2),
        Workload("par_loop", f"{par:,}-item parallel loop, {gate} in flight", loop(par, gate),
                 "BenchParallelLoop", {"n": par, "max_in_flight": gate}, tasks=par),
        Workload("many", f"{many} executions of a {short}-step chain at once", chain(short, "short"),
                 "BenchChain", {"n": short}, executions=many, tasks=short),
        Workload("fast_path", f"{fast} steps: fast path vs hand-written local activities", fast_playbook,
                 "BenchChain", {"n": fast, "local": True}, tasks=fast, fast_path=True,
                 na=None if opt_in else "fast-path opt-in not set (FAST_PATH_OPT_IN in benchmarks/workloads.py)"),
        Workload("handoff", f"~{blob / (1 << 20):g} MiB result passed between two steps", handoff(blob),
                 "BenchHandoff", {"size": blob}, tasks=2),
        Workload("retry", "retry: fails twice (1 s delay), then succeeds", retry(), "BenchRetry", {},
                 tasks=1, per_run=_counter),
        Workload("user_activity", f"{user} steps of `kind: activity` vs the same activity, hand-written",
                 user_activity_chain(user), "BenchChain", {"n": user}, tasks=user, queue_in_payload=True),
    ]


def playbook_yaml(playbook: dict[str, Any]) -> str:
    """The YAML a user would write (block scalars for code)."""
    return yaml.dump(playbook, Dumper=_Dumper, sort_keys=False, width=100)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)
