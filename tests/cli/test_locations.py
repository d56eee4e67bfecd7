"""Runtime errors point at file:line:col of the playbook."""

from __future__ import annotations

import textwrap

import pytest

from noetl_temporal.cli.locations import locate_message, normalized_path
from noetl_temporal.dsl import load_playbook_text

TEXT = textwrap.dedent("""\
    workflow:
      - step: events.batch
        tool:
          - name: fetch
            kind: python
            input: {x: "{{ 1 / 0 }}"}
            code: "result = x"
        next: {arcs: [{step: b, when: "{{ nope > 1 }}"}]}
      - step: b
        loop: {in: "{{ 5 }}", iterator: i}
        tool: {kind: noop}
    """)


@pytest.mark.parametrize("where, path", [
    ("events.batch.tool.fetch.input.x", "workflow[0].tool[0].config.input.x"),
    ("b.loop.in", "workflow[1].loop.in"),
    ("events.batch.next.arcs[0].when", "workflow[0].next.arcs[0].when"),
    ("unknown.tool.x", None),
])
def test_normalized_path(where, path):
    assert normalized_path(load_playbook_text(TEXT).playbook, where) == path


@pytest.mark.parametrize("message, prefix", [
    ("events.batch.tool.fetch.input.x: ZeroDivisionError", "<string>:6:17: "),
    ("step 'b' failed: b.loop.in: loop.in rendered to int", "<string>:10:12: "),
    ("no place named here", ""),
])
def test_locate_message(message, prefix):
    loaded = load_playbook_text(TEXT)
    assert locate_message(loaded, message) == prefix + message
