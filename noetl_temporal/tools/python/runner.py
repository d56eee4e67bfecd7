"""Child side of the python tool: run as ``python -S -c <this file's text> <fd> <ppid>``, or
loaded by the fork server (``zygote``), whose forked children call :func:`serve`.

Standard library only, and as few imports as possible before the user code runs:
a spawned runner pays its start-up time on every task.

Protocol: the request JSON arrives on stdin; exactly one response JSON is written to
the file descriptor named in ``argv[1]``. The user's ``print()`` output stays on the
real stdout/stderr, which the parent captures separately, so it cannot corrupt the
response. After responding the child leaves with ``os._exit`` so stray non-daemon
threads or atexit hooks of user code cannot hang the task.

Nothing task-specific is known before the request: the code, its parameters, its
``argv`` and its working directory (``cwd``, entered before the code runs) all come
with it. So a process forked from the fork server, which has imported this module and
:func:`preload` once, serves a task exactly like a process started for it. Either way a
process serves exactly one request; one that reads EOF instead of a request (its worker
gave up or died) exits quietly.

``_run`` (one request to a response dict) is also used in the worker itself by the
opt-in in-worker mode (``inworker``).
"""

import _collections_abc  # loaded by every interpreter at start-up (os uses it)
import os
import sys

# Not `from typing import TYPE_CHECKING`: the runner imports as little as it can before the
# user code runs (mypy treats any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import json
    from collections.abc import Callable
    from typing import Any

# Bound by _use_json (json is imported lazily, and user code may replace json.dumps).
_dumps: "Callable[..., str]"

MODULE = "__noetl_task__"  # not "__main__": an `if __name__ == "__main__": main()` guard
# would otherwise run main a second time after we call it ourselves.
CONVENIENCE = ("json", "os", "datetime", "uuid")  # NoETL's worker pre-binds these


def _default(o):
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).decode("utf-8", "replace")
    return str(o)


def _sanitize(x, seen):
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if id(x) in seen:
        return "<cycle>"
    if isinstance(x, dict):
        seen.add(id(x))
        out = {k if isinstance(k, str) else str(k): _sanitize(v, seen) for k, v in x.items()}
        seen.discard(id(x))
        return out
    if isinstance(x, (list, tuple, set, frozenset)):
        seen.add(id(x))
        items = [_sanitize(v, seen) for v in x]
        seen.discard(id(x))
        return items
    return _sanitize(_default(x), seen)


def _encode(resp):
    try:
        return _dumps(resp, default=_default).encode()
    except (TypeError, ValueError, RecursionError):
        return _dumps(_sanitize(resp, set()), default=_default).encode()


def _text(exc):
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error
        text = repr(exc)
    return text if len(text) <= 2000 else text[:2000] + "..."


def _error(exc, filename, code):
    """Describe an exception raised by user code: type, message, user line, traceback."""
    import linecache
    import traceback

    # Register the source so the traceback shows the user's lines, not just numbers.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    line = None
    message = _text(exc)
    if isinstance(exc, SyntaxError):
        line, message = exc.lineno, exc.msg  # str() would repeat "(<file>, line n)"
        text = "".join(traceback.format_exception_only(type(exc), exc))
    else:
        # Start the traceback at the first user frame: the runner's frames are noise.
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != filename:
            tb = tb.tb_next
        first = tb or exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(exc), exc, first))
    return {"ok": False, "kind": "python", "type": type(exc).__name__, "message": message,
            "line": line, "traceback": text[-4000:]}


def _exit_error(exc):
    code = exc.code
    return {"ok": False, "kind": "python", "type": "SystemExit",
            "message": f"the code called sys.exit({code!r})", "line": None, "exit_code": code}


def _import_libs(libs, g):
    """`libs: {alias: module}` / `{alias: {from: pkg, import: name}}` / `[module, ...]`."""
    import importlib

    if isinstance(libs, str):
        libs = [libs]
    if isinstance(libs, list):
        libs = {str(m).split(".")[0]: m for m in libs}
        top_level = True
    else:
        top_level = False
    for alias, spec in libs.items():
        if isinstance(spec, dict):
            mod = importlib.import_module(spec["from"])
            g[alias] = getattr(mod, spec.get("import") or alias)
        elif top_level:
            importlib.import_module(spec)  # `import a.b` binds `a`, with `a.b` loaded
            g[alias] = sys.modules[alias]
        else:
            g[alias] = importlib.import_module(spec)


# Parameter kinds, in signature order (as inspect.Parameter's).
POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, VAR_POSITIONAL, KEYWORD_ONLY, VAR_KEYWORD = range(5)
NO_DEFAULT = object()
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
# A freshly forked child pays for every page of the fork server it touches (copy-on-write):
# inspect.signature touches enough of the inspect module to cost ~0.3 ms a task, reading
# a plain function's code object almost nothing.
_FUNCTION = type(_default)
_GENERATOR = type(_ for _ in ())
_NEVER_AWAITABLE = frozenset({dict, list, str, int, float, bool, type(None), tuple})


def parameters(main):
    """``[(name, kind, default or NO_DEFAULT)]`` of ``main``, as ``inspect.signature`` sees
    them; None when it has no signature (a builtin without one)."""
    if type(main) is not _FUNCTION or "__wrapped__" in main.__dict__ or "__signature__" in main.__dict__:
        return _parameters_by_inspect(main)
    code = main.__code__
    names, npos, nposonly = code.co_varnames, code.co_argcount, code.co_posonlyargcount
    defaults, kwdefaults = main.__defaults__ or (), main.__kwdefaults__ or {}
    first_default = npos - len(defaults)
    out = [(names[i], POSITIONAL_ONLY if i < nposonly else POSITIONAL_OR_KEYWORD,
            defaults[i - first_default] if i >= first_default else NO_DEFAULT) for i in range(npos)]
    kwonly = names[npos:npos + code.co_kwonlyargcount]
    rest = npos + len(kwonly)  # then the *args name, then the **kwargs name
    if code.co_flags & _CO_VARARGS:
        out.append((names[rest], VAR_POSITIONAL, NO_DEFAULT))
        rest += 1
    out += [(name, KEYWORD_ONLY, kwdefaults[name] if name in kwdefaults else NO_DEFAULT) for name in kwonly]
    if code.co_flags & _CO_VARKEYWORDS:
        out.append((names[rest], VAR_KEYWORD, NO_DEFAULT))
    return out


def _parameters_by_inspect(main):
    import inspect

    try:
        sig = inspect.signature(main)
    except (TypeError, ValueError):
        return None
    return [(p.name, int(p.kind), NO_DEFAULT if p.default is p.empty else p.default)
            for p in sig.parameters.values()]


def _call_main(main, params):
    signature = parameters(main)
    if signature is None:
        return main(), None
    positional, keywords, missing, var_kw = [], {}, [], False
    for name, kind, default in signature:
        if kind == VAR_POSITIONAL:
            continue
        if kind == VAR_KEYWORD:
            var_kw = True
            continue
        if name in params:
            value = params[name]
        elif default is not NO_DEFAULT:
            if kind != POSITIONAL_ONLY:
                continue
            value = default
        else:
            missing.append(name)
            continue
        if kind == POSITIONAL_ONLY:
            positional.append(value)
        else:
            keywords[name] = value
    if missing:
        names = ", ".join(repr(n) for n in missing)
        have = ", ".join(sorted(params)) or "none"
        return None, {
            "ok": False, "kind": "config", "type": "MissingParameter", "line": None,
            "message": f"main() needs parameter(s) {names} but the task's input/args have no such key "
                       f"(available: {have})",
        }
    if var_kw:
        bound = {name for name, _, _ in signature}
        keywords.update({k: v for k, v in params.items() if k not in bound})
    rv = main(*positional, **keywords)
    if type(rv) not in _NEVER_AWAITABLE and _awaitable(rv):
        import asyncio

        async def _await(aw):
            return await aw

        rv = asyncio.run(_await(rv))
    return rv, None


_CO_ITERABLE_COROUTINE = 0x100


def _awaitable(value):
    """``inspect.isawaitable`` without importing ``inspect`` into the task's process."""
    if isinstance(value, _collections_abc.Awaitable):  # coroutines, futures, any __await__
        return True
    code = getattr(value, "gi_code", None) if type(value) is _GENERATOR else None
    return code is not None and bool(code.co_flags & _CO_ITERABLE_COROUTINE)  # @types.coroutine


def _run(req):
    import types

    code, filename, params = req["code"], req["filename"], req["params"]
    module = types.ModuleType(MODULE)  # a real module, so dataclasses/pickle can find it
    sys.modules[MODULE] = module
    g = module.__dict__
    g["input_data"] = params
    g["args"] = params
    for name in CONVENIENCE:
        if name in code and name not in params:  # substring test: cheap, rarely wrong
            g[name] = __import__(name)
    g.update(params)  # names from input/args win over everything above
    prebound_main = g.get("main")
    try:
        if req.get("libs"):
            _import_libs(req["libs"], g)
        compiled = compile(code, filename, "exec")
        exec(compiled, g)
        main = g.get("main")
        if callable(main) and main is not prebound_main:
            result, err = _call_main(main, params)
            if err:
                return err
        else:
            result = g.get("result")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return _exit_error(exc)
        result = g.get("result")  # sys.exit(0): the code finished early, successfully
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt etc. are user errors too
        return _error(exc, filename, code)
    return {"ok": True, "result": result}


_PRCTL: "Any" = None  # libc's prctl (False: not available), looked up once (the fork server's children reuse it)


def _prctl():
    global _PRCTL
    if _PRCTL is None and sys.platform.startswith("linux"):
        try:
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl
            prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
            _PRCTL = prctl
        except (OSError, AttributeError, ImportError):
            _PRCTL = False
    return _PRCTL


def _die_with_parent(parent):
    """SIGKILL when the parent dies (Linux), then make sure it has not died already.

    Every runner asks for the signal itself, before anything else: a spawned one is
    started without a ``preexec_fn`` (so the worker can use ``vfork``), and a forked
    one (``zygote``) asks for it towards the fork server it came from.
    """
    prctl = _prctl()
    if prctl:
        prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != parent:
        os._exit(137)


def _use_json():
    """Import json and keep its ``dumps``: user code may replace ``json.dumps``, and the
    answer must still be JSON."""
    global json, _dumps
    import json

    _dumps = json.dumps


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
        _encode(_run(json.loads(_WARM_REQUEST)))
    except BaseException:  # noqa: BLE001,S110 - only a head start: the task runs the same either way
        pass
    finally:
        sys.modules.pop(MODULE, None)


def _line_buffered_output():
    """Line buffering keeps printed lines even when the code crashes or calls os._exit."""
    import io  # loaded by the interpreter at start-up: costs nothing

    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):  # always, in a runner process
            stream.reconfigure(line_buffering=True)


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


def _child_main():
    # The runner's own imports must not come from the directory the process starts in;
    # the user code gets `''` (its working directory) back in front of the path.
    path0 = sys.path.pop(0) if sys.path and sys.path[0] == "" else None
    _die_with_parent(int(sys.argv[2]))
    start_site()
    _use_json()
    serve(int(sys.argv[1]), path0)


def serve(fd, path0):
    """Read one request from stdin, run it, answer on ``fd`` and leave (never returns)."""
    pid = os.getpid()
    os.set_inheritable(fd, False)  # user subprocesses must not hold the response pipe open
    raw = sys.stdin.buffer.read()
    if not raw:  # no request: the worker is gone or gave up on the task
        os._exit(0)
    req = json.loads(raw)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the request is consumed; user `input()` sees EOF
    os.close(null)
    _line_buffered_output()
    sys.argv = [req["filename"]]
    resp = _enter(req.get("cwd"))
    if resp is None:
        if path0 is not None:
            sys.path.insert(0, path0)
        resp = _run(req)
    if os.getpid() != pid:  # a fork made by the user code ran to here: only one may answer
        os._exit(0)
    data = _encode(resp)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001,S110 - user may have closed or replaced it
            pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    # Output first, then the answer: once the parent has the answer and EOF on all
    # three pipes the task is done, without waiting for this process's teardown.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os._exit(0)


def _enter(cwd):
    """Change into the task's directory; an error response if that is impossible."""
    if not cwd:
        return None
    try:
        os.chdir(cwd)
    except OSError as exc:
        return {"ok": False, "kind": "python", "type": type(exc).__name__, "line": None,
                "message": f"cannot enter the task's working directory {cwd!r}: {_text(exc)}"}
    return None


if __name__ == "__main__":
    _child_main()
