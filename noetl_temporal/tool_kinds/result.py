"""``kind: result`` (tools/result.py): read a stored result back."""

from .declaration import Setting, ToolKind

RESULT = ToolKind(
    kind="result",
    summary="reads a stored result (a ResultRef) back, whole or the parts `select` names",
    settings=(
        Setting("ref", ("any",), "a ResultRef (`ref: \"{{ fetch }}\"`) or its `noetl://` string; any other "
                                 "value passes through"),
        Setting("select", ("mapping",), "`{name: dotted.path or expression}`, written without `{{ }}`",
                template=False),
    ),
    required=(("ref",),),
    reads_result_refs=True,
)
