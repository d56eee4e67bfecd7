"""Turn the engine's runtime ``where`` (``<step>.tool.<task>.input.x``, ``<step>.loop.in``,
``<step>.next.arcs[0].when`` ...) into ``file:line:col`` of the playbook, so a runtime
template error points at the line to fix, like a validation error does."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["normalized_path", "locate_message"]

# an engine ``where`` starts the message, or follows "step 'x' failed: "
_PREFIX = re.compile(r"^(?:step '[^']*' failed: )?(?P<where>[^:\s']+): ")


def normalized_path(playbook: Any, where: str) -> str | None:
    """The normalized JSON path of an engine ``where``, or None if it names no step."""
    names = sorted((s.step for s in playbook.workflow), key=len, reverse=True)
    step_name = next((n for n in names if where == n or where.startswith(n + ".")), None)
    if step_name is None:
        return None
    index = next(i for i, s in enumerate(playbook.workflow) if s.step == step_name)
    rest = where[len(step_name) + 1:]
    base = f"workflow[{index}]"
    if rest.startswith("tool."):
        tail = rest[len("tool."):]
        tasks = playbook.workflow[index].tool
        task = next((t for t in sorted(tasks, key=lambda t: len(t.name), reverse=True)
                     if tail == t.name or tail.startswith(t.name + ".")), None)
        if task is None:
            return f"{base}.tool"
        position = tasks.index(task)
        inner = tail[len(task.name) + 1:]
        if not inner:
            return f"{base}.tool[{position}]"
        if inner.startswith(("set", "spec.")):
            return f"{base}.tool[{position}].{inner}"
        return f"{base}.tool[{position}].config.{inner}"
    return f"{base}.{rest}" if rest else base


def locate_message(loaded: Any, message: str | None) -> str | None:
    """Prefix ``message`` with ``file:line:col`` when it starts with an engine ``where``."""
    if not message:
        return message
    match = _PREFIX.match(message)
    if not match:
        return message
    path = normalized_path(loaded.playbook, match.group("where"))
    if path is None:
        return message
    _, position = loaded.locate(path)
    if position is None:
        return message
    line, col = position
    return f"{loaded.source}:{line}:{col}: {message}"
