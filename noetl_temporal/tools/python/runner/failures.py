"""An error of the user code as the task's answer: its type, message, the user's line
and a traceback that starts at the user's first frame (the runner's frames are noise).

The message and the traceback are cut to ``MESSAGE_CHARS`` and ``TRACEBACK_CHARS``. A task
with secrets sends ``cut_margin`` (the longest text a secret is matched in): the runner then
keeps that much more, and the tool masks the secrets before it makes the cut itself, so a
secret across the cut is masked whole rather than shown in part.
"""

MESSAGE_CHARS = 2000
TRACEBACK_CHARS = 4000


def _text(exc, margin=0):
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error
        text = repr(exc)
    keep = MESSAGE_CHARS + margin
    return text if len(text) <= keep else text[:keep] + "..."


def _error(exc, filename, code, margin=0):
    """Describe an exception raised by user code: type, message, user line, traceback."""
    import linecache
    import traceback

    # Register the source so the traceback shows the user's lines, not just numbers.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    line = None
    message = _text(exc, margin)
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
            "line": line, "traceback": text[-(TRACEBACK_CHARS + margin):]}


def _exit_error(exc):
    code = exc.code
    return {"ok": False, "kind": "python", "type": "SystemExit",
            "message": f"the code called sys.exit({code!r})", "line": None, "exit_code": code}
