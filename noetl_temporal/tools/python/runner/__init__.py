"""Child side of the python tool: the program a task's process runs. Spawned as
``python -S -c <bootstrap> <fd> <ppid>`` (``spawn.RUNNER`` loads this package by path and
calls ``startup.child_main``), or loaded by path by the fork server (``zygote``), whose
forked children call :func:`serve`.

Standard library only, and as few imports as possible before the user code runs:
a spawned runner pays its start-up time on every task. The package runs outside
``noetl_temporal`` (loaded by path under the name ``_noetl_pyrunner``): its modules import
each other relatively and nothing else of ours (``tests/test_architecture.py``).

Protocol: the request JSON arrives on stdin; exactly one response JSON is written to
the file descriptor named in ``argv[1]``. The user's ``print()`` output stays on the
real stdout/stderr, which the parent captures separately, so it cannot corrupt the
response. After responding the child leaves with ``os._exit`` so stray non-daemon
threads or atexit hooks of user code cannot hang the task.

Nothing task-specific is known before the request: the code, its parameters, its
``argv`` and its working directory (``cwd``, entered before the code runs) all come
with it. So a process forked from the fork server, which has imported this package and
:func:`preload` once, serves a task exactly like a process started for it. Either way a
process serves exactly one request; one that reads EOF instead of a request (its worker
gave up or died) exits quietly.

The modules: running one request (``running``: ``_run``, also used in the worker itself by
the opt-in in-worker mode, ``inworker``), an error of the user code as the answer
(``failures``), the answer as JSON whatever the code returned (``answer``), the process
around one request (``process``: ``serve``, dying with the parent), and the interpreter's
start-up (``startup``: ``site`` without eager ``.pth`` hooks, what the fork server
preloads, the warm-up of a spare).
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
