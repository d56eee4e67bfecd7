"""The runner interpreter's start-up: what a spawned runner does first (:func:`child_main`),
``site`` without eager ``.pth`` hooks (:func:`start_site`), what the fork server imports
once for every task (:func:`preload`), and a spare's warm-up before its task (:func:`warm`)."""

import os
import sys

from . import answer
from .answer import _encode, _use_json
from .process import _die_with_parent, _line_buffered_output, serve
from .running import CONVENIENCE, MODULE, _run


# perf: the imports and the compiler's set-up every task would pay (~1 ms) — benchmark: probes.python_overhead
def preload():
    """Import what every task uses, ahead of any request (the fork server does this
    once; a spawned runner imports lazily, its start-up time is paid per task).

    Only that: each task's fork copies the page tables of the server's whole heap and
    tears them down again, about 0.06 ms per MiB, so a module most tasks never use
    (``inspect``, ``traceback`` for errors) costs every task more than it saves the few
    that import it. ``datetime`` and ``uuid`` stay: NoETL binds them for any code that
    names them, and loading their C extensions in a task's process would cost that task
    about 2 ms (preloaded, they cost every task about 0.08 ms)."""
    import types  # noqa: F401

    _use_json()
    for name in CONVENIENCE:  # in most tasks' code
        __import__(name)
    # The first compile() in a process builds the compiler's AST types: about 1 ms of CPU
    # and 110 pages, which every task's process would pay again unless it is done here.
    # (Loading this module from source did that by chance; loading it from a .pyc does not.)
    compile("", "<noetl preload>", "exec")


# A task much like a real one: a `main` with a parameter, a result of every JSON kind.
_WARM_REQUEST = ('{"code": "def main(n, *, scale=2):\\n    return {\\"n\\": [n * scale, 1.5, None, True, \\"x\\"]}\\n", '
                 '"filename": "<noetl warm-up>", "params": {"n": 1}, "cwd": null}')


# perf: first-touch page faults off the task's path (~0.3 ms latency) — benchmark: probes.python_overhead
def warm():
    """Go through a small task in a forked child *before* its real one arrives.

    A forked child pays a copy-on-write page fault for each page of the fork server it
    touches first, and any task touches mostly the same ones (the runner, json, the
    compiler, the output streams). Touched while the child waits for work, they are off the
    task's path (~0.3 ms of its latency). It leaves nothing behind: no output, no module in
    ``sys.modules``, the streams configured as ``serve`` configures them anyway.
    """
    try:
        _line_buffered_output()
        _encode(_run(answer.json.loads(_WARM_REQUEST)))
    except BaseException:  # noqa: BLE001,S110 - only a head start: the task runs the same either way
        pass
    finally:
        sys.modules.pop(MODULE, None)


# perf: .pth hooks' imports in every task's process (2.5 -> 1.7 ms CPU a task) — benchmark: probes.python_overhead
def start_site():
    """What ``site`` does when an interpreter starts, for a runner started with ``-S``,
    except the ``import`` lines of ``.pth`` files: those wait for the first import that no
    finder can satisfy (:class:`_DeferredPthImports`).

    Such lines are environment hooks (an editable install's finder, setuptools' distutils
    shim, a certificate hook) that import ``pathlib``, ``zipfile``, ``importlib.resources``
    and more: on a machine with a few of them they double the start-up time of an
    interpreter and add megabytes to every process the fork server forks, which each
    task pays for (copying page tables, copy-on-write faults). Everything else ``site``
    does happens as usual: site and user site directories and the path lines of ``.pth``
    files on ``sys.path`` in their order, ``sitecustomize``/``usercustomize``,
    ``exit``/``quit``/``help``. An import that only a ``.pth`` hook can satisfy works,
    it just runs the hooks first (once per process). What differs: ``sys.flags.no_site``
    reads 1, and a hook's effect that is not about imports waits for an import miss.
    """
    if not sys.flags.no_site:  # started without -S: site has already run
        return
    import site

    real_addpackage = site.addpackage
    deferred = []  # (site dir, .pth file name) of the files with import lines

    def addpackage(sitedir, name, known_paths):
        lines = _pth_lines(os.path.join(sitedir, name))
        if not any(line.startswith(("import ", "import\t")) for line in lines):
            return real_addpackage(sitedir, name, known_paths)
        deferred.append((sitedir, name))
        for line in lines:  # its path lines now, where site puts them; the imports later
            if line.startswith(("#", "import ", "import\t")) or not line.strip():
                continue
            path, case = site.makepath(sitedir, line.rstrip())
            if case not in known_paths and os.path.exists(path):
                sys.path.append(path)
                known_paths.add(case)
        return known_paths

    site.addpackage = addpackage
    try:
        site.main()
    finally:
        site.addpackage = real_addpackage
    if deferred:
        sys.meta_path.append(_DeferredPthImports(deferred))


def _pth_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


class _DeferredPthImports:
    """Last on ``sys.meta_path``: the first import no other finder satisfies runs the
    deferred ``.pth`` files through ``site.addpackage`` (their import lines, now; their
    path lines are on ``sys.path`` already), then asks the finders again.

    Threads need nothing more: the interpreter asks each finder under its import lock, so
    the hooks run once, whole, before any other thread's finder call; a thread whose
    import missed meanwhile goes on down the live ``sys.meta_path`` and meets the finders
    the hooks appended. An import that misses inside a hook is a plain miss."""

    def __init__(self, deferred):
        self.deferred = deferred

    def find_spec(self, fullname, path=None, target=None):
        if not self.deferred:
            return None
        deferred, self.deferred = self.deferred, []
        import site

        known = site._init_pathinfo()  # type: ignore[attr-defined]  # what site.addsitedir uses
        for sitedir, name in deferred:
            site.addpackage(sitedir, name, known)  # site's own code: hooks that read its frame work
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec
        return None


def child_main():
    # The runner's own imports must not come from the directory the process starts in;
    # the user code gets `''` (its working directory) back in front of the path.
    path0 = sys.path.pop(0) if sys.path and sys.path[0] == "" else None
    _die_with_parent(int(sys.argv[2]))
    start_site()
    _use_json()
    serve(int(sys.argv[1]), path0)
