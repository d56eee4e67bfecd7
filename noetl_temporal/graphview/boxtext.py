"""The text inside a step's box: its subtitle (tool kinds, loop, join, admission, router,
final) wrapped to the box's width, and the box's height that holds it all.

Why wrap rather than cut: a cut subtitle ("join: runs once, after its live b…") hides
the very thing the box is there to say. Subtitle lines are monospace (page.css), so a
line's width is its length times :data:`~.labels.CHAR_W` and the wrap fits in the browser
too. Only a user's own long expression (a loop's ``in``) is cut, after a few lines; the
step's tooltip keeps all of it.
"""

from __future__ import annotations

from .labels import CHAR_W, clip
from .mermaid import node_label
from .model import Node

__all__ = ["PAD_X", "NAME_Y", "SUB_Y", "SUB_LINE", "box_height", "state_y", "subtitle", "wrap"]

PAD_X = 10          # px between the box's edge and its text
NAME_Y = 20         # the name's baseline, from the box's top
SUB_Y = 38          # the first subtitle line's baseline
SUB_LINE = 15       # px from one subtitle line to the next (11px monospace)
_STATE_GAP = 19     # from the last subtitle line to the state line
_BOTTOM = 10        # below the state line
_MAX_LINES = 3      # per subtitle item: a longer loop expression is cut (tooltip: all of it)


def wrap(text: str, chars: int) -> list[str]:
    """``text`` in lines of at most ``chars`` characters, broken at spaces (a longer word
    is broken where it must be)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while len(word) > chars:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:chars])
            word = word[chars:]
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= chars:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def subtitle(node: Node, width: float) -> list[str]:
    """The subtitle's lines for a box ``width`` px wide: each item of the step's label
    after its name, wrapped, at most a few lines each."""
    chars = int((width - 2 * PAD_X) / CHAR_W)
    out: list[str] = []
    for item in node_label(node)[1:]:
        lines = wrap(item, chars)
        if len(lines) > _MAX_LINES:
            lines = [*lines[:_MAX_LINES - 1], clip(" ".join(lines[_MAX_LINES - 1:]), chars)]
        out.extend(lines)
    return out


def state_y(height: float) -> float:
    """The state line's baseline: at the box's bottom."""
    return height - _BOTTOM


def box_height(lines: int, least: float) -> float:
    """A box tall enough for its name, ``lines`` subtitle lines and its state; at least ``least``."""
    return max(least, SUB_Y + SUB_LINE * max(lines - 1, 0) + _STATE_GAP + _BOTTOM)
