"""``kind: noop``: does nothing and returns something predictable.

Used for terminal and placeholder steps; returning the task's ``input``/``args`` makes it
a pass-through that arcs and later steps can read.
"""

from __future__ import annotations

from typing import Any

from ..tool_kinds.noop import NOOP
from .base import ToolCall


class NoopTool:
    declaration = NOOP  # its settings and traits: tool_kinds/noop.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        if "result" in config:
            return config["result"]
        merged: dict[str, Any] = {}
        present = False
        for key in ("input", "args"):  # args wins, as in the python tool
            value = config.get(key)
            if isinstance(value, dict):
                merged.update(value)
                present = True
        return merged if present else None
