"""Running one request: the task's code in a module of its own, its bindings (``input_data``,
``args``, the parameters, NoETL's convenience modules, ``libs``), ``main()`` called with the
parameters it names (awaited when it is a coroutine), and the response dict."""

import _collections_abc  # loaded by every interpreter at start-up (os uses it)
import sys

from .failures import _error, _exit_error

MODULE = "__noetl_task__"  # not "__main__": an `if __name__ == "__main__": main()` guard
# would otherwise run main a second time after we call it ourselves.
CONVENIENCE = ("json", "os", "datetime", "uuid")  # NoETL's worker pre-binds these


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
_FUNCTION = type(_import_libs)
_GENERATOR = type(_ for _ in ())
_NEVER_AWAITABLE = frozenset({dict, list, str, int, float, bool, type(None), tuple})


# perf: inspect.signature's first use in a fresh child (0.3 ms of page faults) — benchmark: probes.python_overhead
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
        # The in-worker mode hands over the code compiled once (``inworker``); a process compiles it.
        compiled = req.get("compiled") or compile(code, filename, "exec")
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
        return _error(exc, filename, code, req.get("cut_margin", 0))
    return {"ok": True, "result": result}
