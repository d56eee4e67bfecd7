"""A template that reads ``keychain`` outside a task's tool settings is a located error
(NTL704): the workflow renders it without secrets, and it silently became null (issue 24)."""

from __future__ import annotations

import pytest

from .helpers import codes, diags, find, playbook

TEXT = playbook("""
keychain:
  - {name: api, kind: secret}
workload:
  w: "{{ keychain.api.token }}"
workflow:
  - step: start
    tool:
      kind: http
      url: "http://127.0.0.1:1/{{ keychain.api.path }}"
      headers: {Authorization: "Bearer {{ keychain.api.token }}"}
    loop: {in: "{{ keychain.api.items }}", iterator: it}
    next:
      arcs:
        - step: end
          when: "{{ keychain.api.ok }}"
          args: {t: "{{ keychain.api.args }}"}
          set: {ctx.tok: "{{ keychain.api.setting }}"}
  - step: end
    tool: {kind: shell, cmd: "echo {{ keychain.api.cmd }}", env: {T: "{{ keychain.api.env }}"}}
""")


@pytest.mark.parametrize("needle", ["keychain.api.token }}\"\nworkflow", "keychain.api.items", "keychain.api.ok",
                                    "keychain.api.args", "keychain.api.setting"])
def test_keychain_outside_tool_settings_is_a_located_error(needle):
    found = [d for d in diags(TEXT) if d.code == "NTL704"]
    line, _ = find(TEXT, needle.split("\n")[0])
    assert any(d.line == line and d.is_error and "only a task's tool settings" in d.message for d in found), \
        [str(d) for d in found]


def test_keychain_in_tool_settings_is_fine():
    lines = {d.line for d in diags(TEXT) if d.code == "NTL704"}
    for needle in ("keychain.api.path", "Bearer {{ keychain", "keychain.api.cmd"):
        assert find(TEXT, needle)[0] not in lines
    assert codes(diags(TEXT)).count("NTL704") == 5
