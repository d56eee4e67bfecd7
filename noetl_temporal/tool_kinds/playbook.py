"""``kind: playbook`` (workflow/subplaybooks.py): another playbook as a child workflow."""

from .declaration import Setting, ToolKind

PLAYBOOK = ToolKind(
    kind="playbook",
    summary="runs another playbook as a child workflow and returns its result",
    settings=(
        Setting("path", ("string",), "the playbook: a file (relative to this playbook's own file, or absolute) or a catalog path (relative to this playbook's catalog path, or as written); see \"Where a sub-playbook is found\"",
                aliases=("playbook",)),
        Setting("version", ("integer", "string"), "the catalog version; default the latest"),
        Setting("return_step", ("string",), "the child step whose result to return"),
        Setting("payload", ("mapping",), "more workload for the child (`input`, `payload`, `args` merged)"),
    ),
    required=(("path",),),
    ignored={"task": "noetl-temporal runs the child playbook from its entry step and does not read `task`",
             "timeout": "the child runs until it ends; bound it with the step's `spec.timeout`"},
    runs_in="workflow",
)
