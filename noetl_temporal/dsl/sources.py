"""Get playbook text from a file or from bytes without surprises.

The loader's first line of defence: a missing path, a directory, a 50 MB dump, an
image renamed to ``.yaml`` or a Latin-1 file each become one located diagnostic
(``NTL001``-``NTL004``) instead of an exception or a YAML error about byte 0xe9.
Files are never read past the size limit.
"""

from __future__ import annotations

from pathlib import Path

from .diagnostics import Reporter

__all__ = ["MAX_BYTES", "read_source", "decode", "check_text", "line_col"]

MAX_BYTES = 5 * 1024 * 1024


def _line_col_of_byte(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


def read_source(path: str | Path, reporter: Reporter) -> str | None:
    """The file's text, or None with a diagnostic (missing, directory, too big, binary)."""
    p = Path(path)
    try:
        if not p.exists():
            reporter.add("NTL001", f"no such file: {p}", line=None)
            return None
        if p.is_dir():
            reporter.add("NTL002", f"{p} is a directory, not a playbook file")
            return None
        if not p.is_file():
            reporter.add("NTL002", f"{p} is not a regular file")
            return None
        if p.stat().st_size > MAX_BYTES:
            reporter.add("NTL003", f"{p} has {p.stat().st_size} bytes; the limit is {MAX_BYTES}")
            return None
        with p.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        reporter.add("NTL002", f"cannot read {p}: {exc.strerror or exc}")
        return None
    if len(raw) > MAX_BYTES:
        reporter.add("NTL003", f"{p} is larger than the {MAX_BYTES}-byte limit")
        return None
    return decode(raw, reporter)


def decode(raw: bytes, reporter: Reporter) -> str | None:
    """UTF-8 text (a BOM is dropped), or None with a located NTL003/NTL004 diagnostic."""
    if len(raw) > MAX_BYTES:
        reporter.add("NTL003", f"the playbook has {len(raw)} bytes; the limit is {MAX_BYTES}")
        return None
    if b"\x00" in raw:
        line, col = _line_col_of_byte(raw, raw.index(b"\x00"))
        reporter.add("NTL004", "the file is binary (it contains NUL bytes)", line=line, col=col)
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _line_col_of_byte(raw, exc.start)
        reporter.add("NTL004", f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x})", line=line, col=col)
        return None


def line_col(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of character ``index`` of ``text``."""
    before = text[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def check_text(text: str, reporter: Reporter) -> bool:
    """Size and binary checks for text that did not come from a file."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        reporter.add("NTL003", f"the playbook has {size} bytes; the limit is {MAX_BYTES}")
        return False
    if "\x00" in text:
        line, col = line_col(text, text.index("\x00"))
        reporter.add("NTL004", "the text is binary (it contains NUL characters)", line=line, col=col)
        return False
    return True
