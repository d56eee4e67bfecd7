"""The engine's modules form a DAG and its control flow does not recurse.

Both are read from the source with ``ast``: the import graph of ``noetl_temporal.engine.*``
(relative and absolute imports) and the call graph of the modules that drive an
execution. A cycle in either fails with the cycle spelled out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "noetl_temporal" / "engine"
PACKAGE = "noetl_temporal.engine"

# The modules that move an execution forward (the rest are data and pure helpers).
CONTROL = ["machine", "completer", "steps", "loops", "pipeline", "routing", "joins", "budget", "failure"]


def _modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text(), str(path)) for path in sorted(ENGINE.glob("*.py"))
            if path.stem != "__init__"}


def _engine_imports(tree: ast.Module, names: set[str]) -> set[str]:
    """The engine modules one module imports (``from . import x``, ``from .x import y``,
    ``import noetl_temporal.engine.x``, ``from noetl_temporal.engine.x import y``)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and node.module and node.module.startswith(PACKAGE):
                base = node.module[len(PACKAGE):].lstrip(".") or None
            else:
                continue  # outside the engine (``..status``, third-party)
            if base is None:
                found |= {alias.name for alias in node.names}
            else:
                found.add(base.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name[len(PACKAGE) + 1:].split(".")[0])
    return found & names


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _engine_imports(tree, set(modules)) - {name} for name, tree in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}   # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


@pytest.mark.parametrize("graph, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
    ({"a": {"a"}}, ["a", "a"]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}, ["b", "c", "d", "b"]),
])
def test_find_cycle_finds_cycles(graph, cycle):
    assert find_cycle(graph) == cycle


def test_the_import_graph_is_read_from_the_source():
    graph = import_graph()
    assert {"machine", "completer", "steps", "loops", "pipeline", "state_machines", "internal_completions"} <= set(graph)
    assert {"completer", "steps", "loops", "pipeline", "joins", "budget"} <= graph["machine"]
    assert "pipeline" in graph["loops"] and "loops" in graph["steps"]


def test_engine_modules_import_each_other_without_a_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle in the engine: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("lower, upper", [
    ("pipeline", {"loops", "steps", "completer", "machine"}),
    ("loops", {"steps", "completer", "machine"}),
    ("steps", {"completer", "machine"}),
    ("completer", {"machine"}),
    ("internal_completions", {"pipeline", "loops", "steps", "completer", "machine"}),
    ("state_machines", set(import_graph()) - {"state_machines"}),
])
def test_lower_layers_never_import_upper_ones(lower, upper):
    """machine -> completer -> steps -> loops -> pipeline: ends travel up as completions."""
    assert not import_graph()[lower] & upper


def _call_graph(names: list[str]) -> dict[str, set[str]]:
    """Calls between the module-level functions of ``names``: ``f(...)`` within a module,
    ``module.f(...)`` and ``f(...)`` for a function imported from another one of them."""
    modules = _modules()
    functions = {name: {n.name for n in modules[name].body if isinstance(n, ast.FunctionDef)} for name in names}
    graph: dict[str, set[str]] = {}
    for name in names:
        imported = {}
        for node in modules[name].body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in functions:
                imported |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                             if a.name in functions[node.module]}
        for fn in (n for n in modules[name].body if isinstance(n, ast.FunctionDef)):
            calls = set()
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                target = node.func
                if isinstance(target, ast.Name):
                    if target.id in functions[name]:
                        calls.add(f"{name}.{target.id}")
                    elif target.id in imported:
                        calls.add(imported[target.id])
                elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                      and target.value.id in functions and target.attr in functions[target.value.id]):
                    calls.add(f"{target.value.id}.{target.attr}")
            graph[f"{name}.{fn.name}"] = calls
    return graph


def test_the_call_graph_is_read_from_the_source():
    graph = _call_graph(CONTROL)
    assert "completer.complete" in graph["machine._admit_tokens"]
    assert "steps.finish_step_run" in graph["completer.dispatch"] | graph["completer._finish_from_pipeline"]
    assert "pipeline.run_pipeline" in graph["loops._start_iteration"]


def test_the_engine_control_flow_does_not_recurse():
    """No function of the control modules reaches itself: the pump and quiescence loop,
    and every end goes through the completer's work list instead of a nested call."""
    cycle = find_cycle(_call_graph(CONTROL))
    assert cycle is None, "recursion in the engine: " + " -> ".join(cycle or [])


def test_the_status_layers_import_no_other_engine_module_and_the_runtime_never_imports_their_docs():
    """Most of the engine imports ``status_layers``; it imports none of them, so importing
    any first never meets a half-initialised module. Its docs generator (``status_docs``,
    which reads the engine's state machines too) is a docs tool: no module imports it."""
    tree = ast.parse((ENGINE / "status_layers.py").read_text())
    modules = [getattr(node, "module", None) or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert modules and not [m for m in modules if m not in ("__future__", "enum", "typing", "errors")]
    package = ENGINE.parent
    users = [p for p in package.rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.ImportFrom) and "status_docs" in
             [(node.module or "").rpartition(".")[2], *(alias.name for alias in node.names)]]
    assert not users, f"the runtime imports the status docs generator: {users}"
