"""``kind: result``: read a stored result back (all of it, or the parts ``select`` names).

``ref`` is a ResultRef (``ref: "{{ fetch }}"``) or its ``noetl://`` string; a value that
is not a reference passes through, so the task works whether or not the upstream
result was large enough to be stored. ``select: {name: expression | dotted.path}`` (expressions without ``{{ }}``, which the engine would render first)
returns ``{name: value}`` instead of the whole body (see ``large_results.select_values``).

The activity does not pre-resolve references for this kind: the tool reads them itself.
"""

from __future__ import annotations

from typing import Any

from ..errors import ToolConfigError
from ..store import large_results
from ..tool_kinds.result import RESULT
from .base import ToolCall


class ResultTool:
    declaration = RESULT  # its settings and traits: tool_kinds/result.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        if "ref" not in config:
            raise ToolConfigError("result task has no 'ref'", fix='add ref: "{{ <step or task name> }}"')
        ref = config["ref"]
        if isinstance(ref, str) and ref.startswith("noetl://"):
            value = await large_results.aresolve_ref(ref)
        else:  # a ResultRef (a part of one too: ``{{ fetch.rows }}``), or values holding some
            value = await large_results.resolve_refs(ref)
        select = config.get("select")
        if select is None:
            return value
        if not isinstance(select, dict):
            raise ToolConfigError("result 'select' must map names to expressions or dotted paths")
        return large_results.select_values(value, select)
