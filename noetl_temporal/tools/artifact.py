"""``kind: artifact``: NoETL's ``action: get`` of a stored result, read as ``kind: result`` does.

NoETL stores a large result in its object store and hands the step a ``_ref``; a later
``artifact`` task with ``input: {result_ref: "{{ step._ref }}"}`` loads the body back.
Here a large result is stored by reference on its own (docs/tools.md, "Large results") and
a template naming the step (``{{ start }}``) or its ``_ref`` gives that reference: this
tool resolves it. A value that is not a reference passes through, as ``kind: result`` does.
"""

from __future__ import annotations

from typing import Any

from ..errors import ToolConfigError
from ..store import large_results
from ..tool_kinds.artifact import ARTIFACT
from .base import ToolCall


class ArtifactTool:
    declaration = ARTIFACT  # its settings and traits: tool_kinds/artifact.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        action = str(config.get("action") or "get").lower()
        if action != "get":
            raise ToolConfigError(f"artifact action {action!r} is not run here",
                                  fix="use `action: get`; a large result is stored on its own")
        # NoETL writes the reference under `input:` (the engine keeps input and args there)
        places = [config, config.get("args") or {}, config.get("input") or {}]
        found = [p[k] for p in places if isinstance(p, dict) for k in ("result_ref", "ref") if k in p]
        if found:
            ref = found[0]
        else:
            raise ToolConfigError("artifact task has no `result_ref`",
                                  fix='add input: {result_ref: "{{ <step>._ref }}"}')
        if isinstance(ref, str) and ref.startswith("noetl://"):
            return await large_results.aresolve_ref(ref)
        return await large_results.resolve_refs(ref)
