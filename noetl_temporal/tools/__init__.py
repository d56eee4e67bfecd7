"""Tools: the data plane. One module per tool kind, one registry, pure asyncio.

Nothing here imports Temporal: the activity wrapper calls :func:`run_outcome`, which
returns the typed ``Outcome`` for every invocation (``status``, ``result``, ``error``,
``meta`` and a per-kind helper such as ``http``/``py``/``shell``); :func:`run_tool` is
the same call returning its JSON.
"""

from . import _workdirs
from .artifact import ArtifactTool
from .base import (
    TOOLS,
    Tool,
    ToolCall,
    ToolResult,
    fail_with,
    get_tool,
    register_tool,
    run_outcome,
    run_tool,
    to_jsonable,
)
from .duckdb import DuckdbTool
from .http import HttpTool
from .http import aclose_clients as _aclose_http_clients
from .nats import NatsTool, SubscriptionTool
from .noop import NoopTool
from .postgres import PostgresTool
from .python import PythonTool
from .python.forkserver import aclose_forkserver
from .result import ResultTool
from .shell import ShellTool
from .transfer import TransferTool


async def aclose_clients() -> None:
    """Release the running loop's pooled tool resources: HTTP clients and the python
    fork server (call on worker shutdown; later tasks recreate them), and the python tasks'
    kept scratch directories."""
    try:
        await _aclose_http_clients()
    finally:
        _workdirs.clear()
        await aclose_forkserver()


def sweep_workdirs() -> int:
    """Remove the python tasks' scratch directories left by workers that were killed (call
    when a worker starts); how many were removed."""
    return _workdirs.sweep()


#: one instance per kind of ``noetl_temporal.tool_kinds.REGISTRY_KINDS`` (the DSL's list;
#: tests/tools/test_tool_kinds.py keeps the two equal)
BUILTIN_TOOLS: tuple[Tool, ...] = (NoopTool(), PythonTool(), ShellTool(), HttpTool(), PostgresTool(),
                                   DuckdbTool(), ResultTool(), NatsTool(), SubscriptionTool(), TransferTool(),
                                   ArtifactTool())
for _tool in BUILTIN_TOOLS:
    register_tool(_tool)
del _tool

__all__ = [
    "sweep_workdirs",
    "TOOLS",
    "BUILTIN_TOOLS",
    "Tool",
    "ToolCall",
    "ToolResult",
    "fail_with",
    "get_tool",
    "register_tool",
    "run_outcome",
    "run_tool",
    "to_jsonable",
    "aclose_clients",
    "aclose_forkserver",
    "HttpTool",
    "NoopTool",
    "PythonTool",
    "ShellTool",
    "PostgresTool",
    "DuckdbTool",
    "ResultTool",
    "NatsTool",
    "SubscriptionTool",
]
