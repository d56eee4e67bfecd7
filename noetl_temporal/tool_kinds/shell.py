"""``kind: shell`` (tools/shell.py): commands run by ``/bin/sh``."""

from .declaration import Setting, ToolKind
from .python import TIMEOUT

SHELL = ToolKind(
    kind="shell",
    summary="runs shell commands with `/bin/sh`, one after another",
    settings=(
        Setting("cmd", ("string", "list"), "a command, or a list run in order; the first failure stops",
                aliases=("cmds", "command")),
        Setting("env", ("mapping",), "environment variables added (a null value removes one)"),
        Setting("inherit_env", ("boolean", "string"), "start from the worker's environment; default true"),
        Setting("cwd", ("string",), "working directory; default: the task's workdir"),
        TIMEOUT,
    ),
    required=(("cmd",),),
)
