"""Arc labels that never overlap: each is placed at its arc's midpoint, then shortened to
the room beside the labels already placed, or moved down a line when too little is left.
A label never sits under a step's box (the box would hide it): when its midpoint leaves
no room, other points along its arc are tried.

Labels are drawn in a monospace font (page.css), so a label's width is its length times
:data:`CHAR_W` and the check here is exact in the browser too. A shortened label ends in
"…"; the arc's tooltip keeps the whole guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CHAR_W", "LINE_H", "Placed", "clip", "place_labels"]

CHAR_W = 6.7      # px per character: 11px monospace (0.6 em) and a little margin
LINE_H = 14       # px: one label line, with the white halo around the text
_PAD = 4          # the halo (stroke 4px) reaches 2px beyond the glyphs on each side
_MIN_CHARS = 8    # shorter than this says nothing: move the label instead
_TRIES = 20


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


@dataclass(frozen=True)
class Placed:
    x: float          # the label's centre (text-anchor: middle)
    y: float          # its baseline
    text: str

    @property
    def box(self) -> tuple[float, float, float, float]:
        half = len(self.text) * CHAR_W / 2 + _PAD
        return self.x - half, self.y - LINE_H + 3, self.x + half, self.y + 3


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


Box = tuple[float, float, float, float]

_DOWN = 3         # lines a label may move down from a point before the next point is tried


def place_labels(anchors: list[tuple[float, float, str]], limit: int, *, obstacles: Sequence[Box] = (),
                 elsewhere: Sequence[Sequence[tuple[float, float]]] = ()) -> list[Placed]:
    """One :class:`Placed` per ``(x, y, text)`` anchor, in order, none overlapping another
    nor an ``obstacles`` box (the steps' boxes: a label under one is hidden). ``elsewhere[i]``:
    other points on label i's arc, tried in order when its anchor leaves no room."""
    out: list[Placed] = []
    for index, (x, y, full) in enumerate(anchors):
        points = [(x, y), *(elsewhere[index] if index < len(elsewhere) else ())]
        taken = [*obstacles, *(p.box for p in out)]
        label = next((found for px, py in points if (found := _fit(px, py, full, limit, taken, _DOWN))), None)
        # no free place on the arc: as near the anchor as labels allow (over a box if it must)
        out.append(label or _fit(x, y, full, limit, [p.box for p in out], _TRIES) or Placed(x, y, clip(full, limit)))
    return out


def _fit(x: float, y: float, full: str, limit: int, taken: list[Box], moves: int) -> Placed | None:
    """The label at ``(x, y)``, shortened to the room beside what it hits or moved down a
    line (at most ``moves`` times); None when it never comes free."""
    label = Placed(x, y, clip(full, limit))
    for _ in range(_TRIES):
        hit = next((box for box in taken if _overlap(label.box, box)), None)
        if hit is None:
            return label
        left, _, right, _ = hit
        room = 2 * max(left - x, x - right) - 2 * _PAD   # centred: half the text each side
        chars = int(room / CHAR_W)
        if _MIN_CHARS <= chars < len(label.text):
            label = Placed(x, label.y, clip(full, chars))
        elif label.y - y < moves * LINE_H:
            label = Placed(x, label.y + LINE_H, label.text)
        else:
            return None
    return None
