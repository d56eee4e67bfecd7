"""``kind: artifact`` (tools/artifact.py): NoETL's name for reading a stored result back."""

from .declaration import Setting, ToolKind

ARTIFACT = ToolKind(
    kind="artifact",
    summary="reads a stored result back (NoETL's `action: get` of a `result_ref`); `kind: result` is the "
            "native spelling",
    settings=(
        Setting("action", ("string",), "`get` (the default; NoETL's `put` is what a large result does on its "
                                       "own here)", choices=("get",)),
        Setting("result_ref", ("any",), "a ResultRef (`\"{{ start._ref }}\"`, `\"{{ start }}\"`) or its "
                                        "`noetl://` string; NoETL writes it under `input:`", aliases=("ref",)),
    ),
    reads_result_refs=True,
)
