"""Tools: the data plane. One module per tool kind, one registry, pure asyncio.

Nothing here imports Temporal: the activity wrapper calls :func:`run_tool`, which
returns the outcome envelope for every invocation (``status``, ``result``, ``error``,
``meta`` and a per-kind helper such as ``http``/``py``/``shell``).
"""

from .base import (
    TOOLS,
    Tool,
    ToolCall,
    ToolResult,
    fail_with,
    get_tool,
    register_tool,
    run_tool,
    to_jsonable,
)
from .duckdb import DuckdbTool
from .http import HttpTool, aclose_clients
from .noop import NoopTool
from .postgres import PostgresTool
from .python import PythonTool
from .result import ResultTool
from .shell import ShellTool

for _tool in (NoopTool(), PythonTool(), ShellTool(), HttpTool(), PostgresTool(), DuckdbTool(), ResultTool()):
    register_tool(_tool)
del _tool

__all__ = [
    "TOOLS",
    "Tool",
    "ToolCall",
    "ToolResult",
    "fail_with",
    "get_tool",
    "register_tool",
    "run_tool",
    "to_jsonable",
    "aclose_clients",
    "HttpTool",
    "NoopTool",
    "PythonTool",
    "ShellTool",
    "PostgresTool",
    "DuckdbTool",
    "ResultTool",
]
