"""A python task's code compiled at validation (NTL314), its error located in the file.

The task's process compiles the same text before it runs it (``tools/python/runner``), so a
syntax error found here is one the run would hit on its first attempt, after the steps
before it ran. Compiling executes nothing. Code holding a template (``{{ }}``, ``{% %}``)
is what the workflow renders, not Python yet: it is left to run time.

Positions: Python reports a line and column of the code block; the diagnostic gives the
playbook file's, found from where the YAML value starts. In a literal block (``code: |``)
the code's line ``n`` is the file's line ``n`` after the ``|`` and its columns are shifted
by the block's indentation; a one-line plain or quoted value is shifted by its column. Where
YAML folds or escapes the text (``>``, a multi-line quoted string, ``code_b64``) the
positions no longer correspond and the diagnostic points at the value's start instead.
"""

from __future__ import annotations

import base64
import binascii
import warnings
from collections.abc import Iterator

from ..templates import is_template
from .diagnostics import Position, Reporter
from .models import Playbook

__all__ = ["check_python_code"]

_FILENAME = "<code>"


def check_python_code(playbook: Playbook, text: str, reporter: Reporter) -> None:
    failures: dict[str, SyntaxError | None] = {}   # generated playbooks repeat one code block
    for norm_path, code, literal in _code_blocks(playbook):
        if code not in failures:
            failures[code] = _compile_error(code)
        error = failures[code]
        if error is not None:
            _report(error, reporter, reporter.resolve(norm_path), text if literal else None)


def _code_blocks(playbook: Playbook) -> Iterator[tuple[str, str, bool]]:
    """(normalized path of the setting, the Python text, whether it is the text as written)."""
    for i, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            if task.kind != "python":
                continue
            where = f"workflow[{i}].tool[{j}].config"
            code = task.config.get("code")
            if isinstance(code, str) and not is_template(code):
                yield f"{where}.code", code, True
            for key in ("code_b64", "code_base64"):
                decoded = _decoded(task.config.get(key))
                if decoded is not None and not is_template(decoded):
                    yield f"{where}.{key}", decoded, False


def _decoded(value: object) -> str | None:
    if not isinstance(value, str) or is_template(value):
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):   # the tool reports bad base64 when it runs
        return None


def _compile_error(code: str) -> SyntaxError | None:
    try:
        with warnings.catch_warnings():   # SyntaxWarnings ("\d") are the run's to print, not validate's
            warnings.simplefilter("ignore")
            compile(code, _FILENAME, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:   # a NUL byte; nesting too deep to compile
        return SyntaxError(str(exc) or type(exc).__name__)
    return None


def _report(error: SyntaxError, reporter: Reporter, source_path: str, text: str | None) -> None:
    found, start = reporter.locate(source_path, value=True)
    line, col = (None, None)
    if found == source_path and start is not None and text is not None:
        line, col = _in_file(text, start, error.lineno or 1, error.offset or 1)
    at_code = f"line {error.lineno} of the code" if error.lineno else "the code"
    reporter.add("NTL314", f"python code does not compile: {error.msg} ({at_code})", source_path,
                 value=True, line=line, col=col)


def _in_file(text: str, start: Position, lineno: int, offset: int) -> Position:
    """The file position of the code's (lineno, offset), given where its YAML value starts."""
    lines = text.splitlines()
    line, col = start
    header = lines[line - 1][col - 1:] if line <= len(lines) else ""
    if header.startswith("|"):
        return line + lineno, _block_indent(lines, line) + offset
    if lineno == 1 and header[:1] in ("'", '"'):
        return line, col + offset          # past the opening quote
    if lineno == 1 and not header.startswith(">"):
        return line, col + offset - 1
    return start


def _block_indent(lines: list[str], header_line: int) -> int:
    """The indentation of a block scalar: that of its first non-blank line."""
    for text in lines[header_line:]:
        if text.strip():
            return len(text) - len(text.lstrip(" "))
    return 0
