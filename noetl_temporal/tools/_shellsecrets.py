"""A shell command's secrets travel in its environment, not in its argv.

A keychain value rendered into ``cmd`` would be part of ``/bin/sh -c <command>``, which
any user of the machine can read in ``ps`` for as long as the task runs. Before the
command starts, every secret of the task (``ToolCall.secrets``: the values and the forms
the keychain masks) is replaced by a reference to an environment variable that holds it,
quoted for where it stands, so the shell sees the very same string:

* unquoted ``tok=SECRET`` becomes ``tok="${NOETL_SECRET_1}"``;
* inside double quotes, ``"${NOETL_SECRET_1}"`` without the outer quotes;
* inside single quotes, the quote is closed around it: ``'a'"${NOETL_SECRET_1}"'b'``.

The environment (``/proc/PID/environ``) is readable by the task's own user only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["hide_secrets"]

_REFERENCE = {"": '"${{{}}}"', '"': "${{{}}}", "'": "'\"${{{}}}\"'"}


def _quote_state(text: str, start: int, end: int, state: str) -> str:
    """The quoting in force at ``end``, scanning from ``start`` in ``state``."""
    index = start
    while index < end:
        char = text[index]
        if state == "'":
            if char == "'":
                state = ""
        elif char == "\\":
            index += 1
        elif state == '"':
            if char == '"':
                state = ""
        elif char in "'\"":
            state = char
        index += 1
    return state


def _innermost(secrets: Sequence[str], command: str) -> list[str]:
    """The secrets to move out of the command: those in it that hold no other secret.

    The masking list also holds every value a keychain template rendered to, which for a
    shell task is the whole ``cmd`` (``"printf '%s' {{ keychain.api.token }}"``): moving
    that out would leave a command of one quoted word. The token inside it is what must go.
    """
    present = {s for s in secrets if s and s in command}
    return [s for s in present if s != command and not any(o != s and o in s for o in present)]


def hide_secrets(command: str, secrets: Sequence[str]) -> tuple[str, dict[str, str]]:
    """``command`` with each secret replaced by a variable reference, and those variables."""
    secrets = _innermost(secrets, command)
    if not secrets:
        return command, {}
    pattern = re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True)))
    names: dict[str, str] = {}
    parts: list[str] = []
    state, position = "", 0
    for match in pattern.finditer(command):
        state = _quote_state(command, position, match.start(), state)
        name = names.setdefault(match.group(), f"NOETL_SECRET_{len(names) + 1}")
        parts += [command[position:match.start()], _REFERENCE[state].format(name)]
        position = match.end()
    if not names:
        return command, {}
    parts.append(command[position:])
    return "".join(parts), {name: value for value, name in names.items()}
