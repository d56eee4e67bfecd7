"""An error of the user code as the task's answer: its type, message, the user's line
and a traceback that starts at the user's first frame (the runner's frames are noise)."""


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
