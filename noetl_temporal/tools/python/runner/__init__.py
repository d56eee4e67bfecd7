"""Child side of the python tool: the program a task's process runs, spawned
(``spawn.RUNNER`` -> ``startup.child_main``) or forked from the fork server (``zygote`` ->
:func:`serve`). Standard library only, loaded by path as ``_noetl_pyrunner`` (its modules
import each other relatively and nothing else of ours: ``tests/test_architecture.py``),
with as few imports as possible before the user code runs.

The request JSON arrives on stdin (code, parameters, ``argv``, ``cwd``: nothing
task-specific is known before it, so a forked process serves a task exactly like a spawned
one); exactly one response JSON goes to the descriptor named in ``argv[1]``, so the user's
``print()`` cannot corrupt it; then ``os._exit``, so stray threads or atexit hooks cannot
hang the task. One request per process; EOF instead of a request exits quietly. Modules:
``running`` (``_run``, also the in-worker mode's), ``failures``, ``answer``, ``process``
(``serve``), ``startup`` (lazy ``.pth`` hooks, the preload, a spare's warm-up), ``reaping``.
See docs/tools.md#python and docs/tools.md#the-fork-server.
"""

from . import reaping
from .answer import _encode, _use_json
from .failures import _error, _exit_error, _text
from .process import _die_with_parent, _enter, _line_buffered_output, serve
from .running import (
    CONVENIENCE,
    KEYWORD_ONLY,
    MODULE,
    NO_DEFAULT,
    POSITIONAL_ONLY,
    POSITIONAL_OR_KEYWORD,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    _call_main,
    _parameters_by_inspect,
    _run,
    parameters,
)
from .startup import child_main, preload, start_site, warm

__all__ = [
    "MODULE", "CONVENIENCE", "NO_DEFAULT", "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL",
    "KEYWORD_ONLY", "VAR_KEYWORD", "parameters", "serve", "preload", "warm", "start_site", "child_main",
    "_run", "_call_main", "_parameters_by_inspect", "_encode", "_use_json", "_error", "_exit_error", "_text",
    "_die_with_parent", "_enter", "_line_buffered_output", "reaping",
]
