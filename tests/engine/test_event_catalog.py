"""The event catalog (engine/event_types.py) is the one home of event names.

Three views must agree with it: the engine's source (every literal name handed to an
emitting call), docs/events.md (every name documented, the tables exact), and what the
engine really emits while running playbooks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from noetl_temporal.engine.event_log import alias_of
from noetl_temporal.engine.event_types import (
    CALL_DONE,
    CALL_ERROR,
    EVENT_TYPES,
    LAST_EVENT_TYPES,
    LEGACY_EVENT_NAMES,
    RESERVED_EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    WORKER_EVENTS,
)
from noetl_temporal.engine.messages import Cancel, Pause, Resume
from noetl_temporal.engine.routing import boundary_event
from noetl_temporal.store.legacy import expand_types

from .harness import err, feed, finished, ok, run

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "noetl_temporal"
DOCS = (REPO / "docs" / "events.md").read_text()
GOLDEN = sorted((REPO / "tests" / "golden").glob("*/playbook.yaml"))
_NAME = re.compile(r"^[a-z]+(\.[a-z_]+)+$")


def _is_emitting(call: ast.Call) -> bool:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return "emit" in name


def _literal_names(node: ast.expr) -> set[str]:
    """String constants that look like event names, also inside ``a if ok else b``."""
    return {n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAME.match(n.value)}


def emitted_in_source() -> dict[str, set[str]]:
    """name -> files that pass it, as a literal, to any call named ``*emit*``."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and _is_emitting(node):
                for arg in node.args:
                    for name in _literal_names(arg):
                        found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_name_the_source_emits_is_in_the_catalog():
    found = emitted_in_source()
    unknown = {name: files for name, files in found.items() if name not in EVENT_TYPES}
    assert not unknown, f"emitted but not in engine/event_types.py: {unknown}"
    # ... and the catalog holds nothing that nobody emits, except what it says is reserved
    assert set(EVENT_TYPES) - set(found) == RESERVED_EVENT_TYPES


_EVENT_LIKE = re.compile(r"^(playbook|workflow|step|task|loop|policy|next|result|execution|"
                         r"call|command|tool|retry|sink|case|iteration)(\.[a-z_]+)+$")


def test_every_event_name_the_package_writes_is_a_catalog_or_legacy_name():
    """Readers list names too (progress lines, graph states, metrics, stores): a typo there
    would silently match nothing."""
    known = set(EVENT_TYPES) | set(LEGACY_EVENT_NAMES)
    strays = [f"{path.relative_to(REPO)}:{node.lineno}: {node.value}"
              for path in PACKAGE.rglob("*.py")
              for node in ast.walk(ast.parse(path.read_text(), str(path)))
              if isinstance(node, ast.Constant) and isinstance(node.value, str)
              and _EVENT_LIKE.match(node.value) and node.value not in known]
    assert not strays, "event names missing from engine/event_types.py:\n" + "\n".join(strays)


def test_catalog_is_consistent():
    assert len(set(EVENT_TYPES)) == len(EVENT_TYPES)
    assert WORKER_EVENTS <= set(EVENT_TYPES)
    assert set(TERMINAL_EVENT_TYPES) <= set(EVENT_TYPES)
    assert set(LAST_EVENT_TYPES) <= set(EVENT_TYPES)
    assert RESERVED_EVENT_TYPES <= set(EVENT_TYPES)
    for legacy, (canonical, narrowing) in LEGACY_EVENT_NAMES.items():
        assert legacy not in EVENT_TYPES, legacy
        assert set(canonical) <= set(EVENT_TYPES), legacy
        assert narrowing in (None, "success", "error"), legacy


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table after ``## heading``, cells without backticks."""
    section = DOCS.split(f"## {heading}\n", 1)[1]
    table: list[list[str]] = []
    for line in section.splitlines():
        if not line.startswith("|"):
            if table:
                break
            continue
        if set(line) <= {"|", "-"}:
            continue
        table.append([cell.strip().replace("`", "") for cell in line.strip("|").split("|")])
    return table[1:]  # without the header


def test_docs_list_every_canonical_type_with_alias_and_source():
    for name in EVENT_TYPES:
        assert f"`{name}`" in DOCS, f"{name} is not documented in docs/events.md"
    rows = _table("Canonical types")
    assert [row[0] for row in rows] == list(EVENT_TYPES)
    for name, alias, source in rows:
        assert alias == alias_of(name)
        assert source == ("worker" if name in WORKER_EVENTS else "server"), name


def test_docs_print_the_legacy_table_exactly():
    documented = {}
    for legacy, canonical, narrowed in _table("Legacy names"):
        narrowing = narrowed.removeprefix("status ").strip() or None
        documented[legacy] = (tuple(c.strip() for c in canonical.split(",")), narrowing)
    assert documented == LEGACY_EVENT_NAMES


def test_call_done_means_the_end_of_a_step_everywhere():
    # event filters
    assert expand_types([CALL_DONE]) == ({"step.done"}, {})
    assert expand_types([CALL_ERROR]) == ({"step.failed"}, {})
    # routing guards: a step's boundary event, and a loop step's loop.done
    assert boundary_event("s", ok=True, loop_done=False, error=None, result=None)["name"] == CALL_DONE
    assert boundary_event("s", ok=False, loop_done=False, error=None, result=None)["name"] == CALL_ERROR
    assert boundary_event("s", ok=True, loop_done=True, error=None, result=None)["name"] == CALL_DONE
    assert boundary_event("s", ok=True, loop_done=False, error=None, result=None)["name"] != CALL_ERROR


def _assert_known(events: list[dict]) -> set[str]:
    names = {e["event_type"] for e in events}
    assert names <= set(EVENT_TYPES), names - set(EVENT_TYPES)
    return names


@pytest.mark.parametrize("path", GOLDEN, ids=[p.parent.name for p in GOLDEN])
@pytest.mark.parametrize("outcome", ["ok", "error"])
def test_golden_playbooks_emit_only_catalog_names(path, outcome):
    tool = (lambda cmd: ok({"n": 1})) if outcome == "ok" else (lambda cmd: err())
    r = run(path.read_text(), tool)
    names = _assert_known(r.events)
    assert r.status in ("COMPLETED", "FAILED")
    assert len(set(TERMINAL_EVENT_TYPES) & names) == 1
    assert r.events[-1]["event_type"] in LAST_EVENT_TYPES


LOOP_WITH_FAILURES = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: catalog_loop}
workflow:
  - step: each
    loop: {in: [1, 2, 3], iterator: n}
    tool: {kind: python, code: "result = n"}
    next: {arcs: [{step: recover, when: "{{ event.name == 'call.error' }}"}, {step: done}]}
  - step: recover
    tool: {kind: noop}
  - step: done
    tool: {kind: noop}
"""


def test_control_and_failure_paths_emit_only_catalog_names():
    failing = run(LOOP_WITH_FAILURES, lambda cmd: err() if cmd.step == "each" else ok())
    assert "recover" in failing.steps_started()    # call.error routed the failed loop step
    paused = run(LOOP_WITH_FAILURES, hold=lambda cmd: True)
    feed(paused, Pause(now="2026-01-01T00:00:01Z", reason="lunch"))
    paused.hold = lambda cmd: False
    for held in list(paused.held):
        feed(paused, finished(held, ok()))
    feed(paused, Resume(now="2026-01-01T00:00:02Z"))
    assert paused.status == "COMPLETED"
    cancelled = run(LOOP_WITH_FAILURES, hold=lambda cmd: True)
    feed(cancelled, Cancel(now="2026-01-01T00:00:01Z", reason="user"))
    seen = set()
    for r in (failing, paused, cancelled):
        seen |= _assert_known(r.events)
        assert r.events[-1]["event_type"] in LAST_EVENT_TYPES
    assert {"playbook.paused", "execution.cancelled", "loop.iteration.failed", "step.failed"} <= seen


def test_status_tables_signal_catalog_events():
    from noetl_temporal.engine.status_layers import TABLES

    signals = {signal for table in TABLES.values() for signal in table.values()}
    assert signals <= set(EVENT_TYPES), signals - set(EVENT_TYPES)
