"""``kind: noop`` (tools/noop.py): returns ``result``, else its ``input``/``args``, else null."""

from .declaration import Setting, ToolKind

NOOP = ToolKind(
    kind="noop",
    summary="does nothing; returns `result`, else `input`/`args` merged, else null",
    settings=(Setting("result", ("any",), "the task's result, as written (templates rendered)"),),
    runs_in="workflow",
    inline=True,
)
