"""What NoETL gives a task implicitly, and a playbook relies on: given explicitly, or refused.

NoETL's python tasks see a global ``context`` holding every step result of the execution
(and ``execution_id``). Here a task sees only its ``input``/``args``, the values history
records, so a retry or a replay runs the code on the same values. A playbook written for
NoETL still runs unedited when its code reads ``context`` by literal names
(``context.get('load', {})``, ``context['load']``): those names, and only those, are given
as the task's input ``context`` (NTL321, a warning that says so). Any other use
(``for k in context``, ``context[name]``) cannot be given without shipping every result
into every task: NTL322 warns that the code will meet a NameError there, with the fix (a
warning, not a refusal: NoETL's fixtures read it in debug output under a policy that
continues past the error). A task whose ``input``/``args``
already has a ``context`` is left alone: the author said what it is.

NoETL's execution ids are numbers, so its SQL writes ``{{ execution_id }}`` unquoted
(into BIGINT columns). Here they are strings (``<playbook>-<hex>``): unquoted, the SQL would
not parse. Such a spot is given ``{{ execution_number }}`` instead, the execution's number
(engine/context.py), so the playbook runs unedited and every SQL of the execution writes
and reads the same number (NTL323, a warning that says so).
NoETL's templates read ``{{ step.data }}`` for a step's result (its envelope ``data``):
the engine gives that alias in the template scope (``engine/envelope_data.py``), so nothing
is rewritten here (NTL339, which warned of it, is retired). docs/migrating-from-noetl.md
("NoETL's own fixtures") says why.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ..templates import is_template
from .diagnostics import Reporter
from .models import Playbook

__all__ = ["give_implicit_context", "number_sql_execution_id", "context_reads", "numbered_sql"]

_NAME = "context"
_SQL_SETTINGS = ("command", "query", "sql", "commands")
_SQL_KINDS = ("postgres", "duckdb")


def context_reads(code: str) -> tuple[list[str] | None, int | None]:
    """``(names, None)``: the names ``code`` reads from a free ``context`` global, in order of
    first use; ``(None, None)`` when it reads no free ``context`` (or binds the name itself,
    or does not parse); ``(None, line)``: the code's line of a read that names no literal key."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None, None   # NTL314 reports code that does not compile
    parents: dict[int, ast.AST] = {}
    loads: list[ast.Name] = []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if _binds(node):
            return None, None
        if isinstance(node, ast.Name) and node.id == _NAME and isinstance(node.ctx, ast.Load):
            loads.append(node)
    names: list[str] = []
    for load in sorted(loads, key=lambda n: (n.lineno, n.col_offset)):
        key = _literal_key(load, parents)
        if key is None:
            return None, load.lineno
        if key not in names:
            names.append(key)
    return (names if loads else None), None


def _binds(node: ast.AST) -> bool:
    """The code gives ``context`` a value of its own: then it is not NoETL's global."""
    if isinstance(node, ast.Name):
        return node.id == _NAME and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, ast.arg):
        return node.arg == _NAME
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == _NAME
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == _NAME
    return False


def _literal_key(load: ast.Name, parents: dict[int, ast.AST]) -> str | None:
    parent = parents.get(id(load))
    if isinstance(parent, ast.Subscript) and parent.value is load:
        index = parent.slice
        return index.value if isinstance(index, ast.Constant) and isinstance(index.value, str) else None
    if isinstance(parent, ast.Attribute) and parent.value is load and parent.attr == "get":
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent and call.args \
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            return call.args[0].value
    return None


def give_implicit_context(playbook: Playbook, reporter: Reporter) -> None:
    """Give each python task that reads NoETL's ``context`` by literal names those names as
    its input ``context`` (NTL321); refuse any other read (NTL322)."""
    steps = {step.step for step in playbook.workflow}
    workload = playbook.workload if isinstance(playbook.workload, dict) else {}
    for i, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            code = task.config.get("code")
            if task.kind != "python" or not isinstance(code, str) or _NAME not in code or is_template(code):
                continue
            where = f"workflow[{i}].tool[{j}].config.code"
            names, dynamic_line = context_reads(code)
            if dynamic_line is not None:
                if not _declared(task.config):
                    reporter.add_normalized(
                        "NTL322", f"step '{step.step}': the python code reads NoETL's implicit `context` global "
                                  f"other than by a literal name (line {dynamic_line} of the code); here a task "
                                  "sees only its input, so that line raises NameError", where)
                continue
            if names is None or _declared(task.config):
                continue
            given = {name: _template_for(name, steps, workload) for name in names}
            given = {name: template for name, template in given.items() if template is not None}
            current = task.config.get("input")
            if current is not None and not isinstance(current, dict):
                reporter.add_normalized(
                    "NTL322", f"step '{step.step}': the python code reads NoETL's implicit `context` global, and "
                              "the task's `input` is a template, so it cannot be given there: the code raises "
                              "NameError", where)
                continue
            task.config["input"] = {**(current or {}), _NAME: given}
            shown = ", ".join(f"{k}: {v}" for k, v in given.items()) or "nothing it names exists here"
            reporter.add_normalized(
                "NTL321", f"step '{step.step}': the python code reads NoETL's implicit `context` global; it gets "
                          f"input `context` = {{{shown}}}", where)


def _declared(config: dict[str, Any]) -> bool:
    return any(isinstance(config.get(key), dict) and _NAME in config[key] for key in ("input", "args"))


def _template_for(name: str, steps: set[str], workload: dict[str, Any]) -> str | None:
    """What NoETL's ``context[name]`` holds, as a template the workflow renders; None for a
    name it would not hold either (``.get`` then returns the code's default)."""
    if name == "execution_id" or name in steps:
        return "{{ " + name + " }}"
    if name in workload and name.isidentifier():
        return "{{ workload." + name + " }}"
    return None


# ------------------------------------------------------------------ execution_id in SQL

_EXECUTION_ID = re.compile(r"\{\{-?\s*execution_id\s*-?\}\}")


def numbered_sql(sql: str) -> str:
    """``sql`` with each ``{{ execution_id }}`` outside quotes and comments made
    ``{{ execution_number }}``; the same text when there is none."""
    out, last = [], 0
    for match in _EXECUTION_ID.finditer(sql):
        if not _quoted_or_comment(sql, match.start()):
            out += [sql[last:match.start()], "{{ execution_number }}"]
            last = match.end()
    return "".join(out) + sql[last:] if out else sql


def _quoted_or_comment(sql: str, at: int) -> bool:
    """Whether position ``at`` of ``sql`` is inside '...', "...", a -- comment or a /* */ one."""
    i, state = 0, ""
    while i < at:
        ch, two = sql[i], sql[i:i + 2]
        if state == "":
            if ch in ("'", '"'):
                state = ch
            elif two == "--":
                state = "--"
            elif two == "/*":
                state, i = "/*", i + 1
        elif state in ("'", '"') and ch == state:
            state = ""        # a doubled quote closes and reopens: the same answer
        elif state == "--" and ch == "\n":
            state = ""
        elif state == "/*" and two == "*/":
            state, i = "", i + 1
        i += 1
    return state != ""


def number_sql_execution_id(playbook: Playbook, reporter: Reporter) -> None:
    """Give each SQL task setting that writes ``{{ execution_id }}`` unquoted the execution's
    number there (NTL323)."""
    for i, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            if task.kind not in _SQL_KINDS:
                continue
            for key in _SQL_SETTINGS:
                value = task.config.get(key)
                if isinstance(value, str):
                    numbered: Any = numbered_sql(value)
                elif isinstance(value, list):
                    numbered = [numbered_sql(t) if isinstance(t, str) else t for t in value]
                else:
                    continue
                if numbered != value:
                    task.config[key] = numbered
                    reporter.add_normalized(
                        "NTL323", f"step '{step.step}': its SQL writes `{{{{ execution_id }}}}` unquoted, where "
                                  "NoETL's numeric id goes; here ids are strings (`<playbook>-<hex>`), so it is "
                                  "given `{{ execution_number }}`, this execution's number",
                        f"workflow[{i}].tool[{j}].config.{key}")
