"""The fixed paths templates read below each name: what a stored result keeps (dsl/result_paths.py)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.dsl.result_paths import paths_in, result_paths

from .helpers import playbook


@pytest.mark.parametrize("text, expected", [
    ("{{ start.count > 100 }}", [("start", "count")]),
    ("{{ start.rows[0].id }}", [("start", "rows.0.id")]),
    ("{{ start['rows'][2] }}", [("start", "rows.2")]),
    ("{{ start.rows | length }}", [("start", "rows")]),                 # the whole list
    ("{{ start.rows[ctx.i].id }}", [("start", "rows"), ("ctx", "i")]),  # cut at a key not fixed
    ("{% for r in start.rows %}{{ r.id }}{% endfor %}", [("start", "rows"), ("r", "id")]),  # (r: harmless)
    ("{{ start }}", []),                                                 # the whole result: its ref
    ("{{ start.a.b ~ other.c }}", [("start", "a.b"), ("other", "c")]),
    ("{{ start.rows.0 }} and {{ start['a.b'].c }}", [("start", "rows.0")]),
    ("start.count outside a template", []),
    ("{{ start.rows[-1].id | default(0) }}", [("start", "rows.-1.id")]),
])
def test_paths_in_one_template(text, expected):
    assert list(paths_in(text)) == expected


def test_result_paths_cover_every_template_of_the_playbook():
    loaded = load_playbook_text(playbook("""\
workflow:
  - step: start
    tool: {kind: python, code: "result = 1"}
    next:
      arcs:
        - step: end
          when: "{{ start.count > 1 }}"
          set: {ctx.first: "{{ start.rows[0].id }}"}
  - step: end
    tool: {kind: python, args: {n: "{{ start.total }}"}, code: "result = n"}
"""))
    paths = result_paths(loaded.playbook)
    assert paths["start"] == {"count", "rows.0.id", "total"}
