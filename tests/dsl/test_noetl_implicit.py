"""NoETL's implicit values: a python task's `context` global given as its input by the names
the code reads (NTL321, else NTL322), and SQL's unquoted `{{ execution_id }}` given the
execution's number (NTL323). docs/migrating-from-noetl.md, "NoETL's own fixtures"."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import load_playbook_text, validate_text
from noetl_temporal.dsl.noetl_implicit import context_reads, numbered_sql


@pytest.mark.parametrize(("code", "reads"), [
    ("x = context.get('load', {})\ny = context['execution_id']", (["load", "execution_id"], None)),
    ("x = context.get('a')\nx = context.get('a', 1)", (["a"], None)),
    ("result = 1", (None, None)),
    ("context = {}\nx = context.get('a')", (None, None)),             # its own variable
    ("def main(context):\n    return context.get('a')", (None, None)),  # a parameter
    ("import context\nx = context.get('a')", (None, None)),
    ("x = 1\nfor k in context:\n    pass", (None, 2)),                  # not a literal name
    ("x = context[name]", (None, 1)),
    ("x = 'a' in context", (None, 1)),
    ("x = list(context.keys())", (None, 1)),
    ("x = (", (None, None)),                                            # NTL314's, not ours
])
def test_the_names_code_reads_from_context(code, reads):
    assert context_reads(code) == reads


@pytest.mark.parametrize(("sql", "numbered"), [
    ("INSERT INTO t VALUES ({{ execution_id }})", "INSERT INTO t VALUES ({{ execution_number }})"),
    ("WHERE id = {{execution_id}} AND x = 1", "WHERE id = {{ execution_number }} AND x = 1"),
    ("WHERE id = '{{ execution_id }}'", None),                            # quoted: the string id
    ('SELECT "t_{{ execution_id }}"', None),
    ("-- run {{ execution_id }}\nSELECT 1", None),                        # a comment
    ("/* {{ execution_id }} */ SELECT {{ execution_id }}", "/* {{ execution_id }} */ SELECT {{ execution_number }}"),
    ("SELECT 'it''s', {{ execution_id }}", "SELECT 'it''s', {{ execution_number }}"),
    ("SELECT {{ execution_id | string }}", None),                         # not the bare id
])
def test_unquoted_execution_id_in_sql_is_numbered(sql, numbered):
    assert numbered_sql(sql) == (numbered if numbered is not None else sql)


PLAYBOOK = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: implicit}
workload: {region: west}
workflow:
  - step: load
    tool: {kind: python, code: "result = {'n': 1}"}
    next: {arcs: [{step: use}]}
  - step: use
    tool:
      kind: python
      code: |
        prev = context.get('load', {})
        rid = context.get('execution_id')
        where = context['region']
        missing = context.get('nothing', 'dflt')
        result = {'n': prev['n'], 'rid': rid, 'where': where, 'missing': missing}
    next: {arcs: [{step: save}]}
  - step: save
    tool:
      kind: duckdb
      command: |
        CREATE TABLE runs (id BIGINT, name TEXT);
        INSERT INTO runs VALUES ({{ execution_id }}, '{{ execution_id }}');
        SELECT id, name FROM runs WHERE id = {{ execution_id }};
"""


def test_context_is_given_as_input_and_sql_gets_the_number_with_located_warnings():
    loaded = load_playbook_text(PLAYBOOK, source="p.yaml")
    use = loaded.playbook.workflow[1].tool[0].config
    assert use["input"] == {"context": {"load": "{{ load }}", "execution_id": "{{ execution_id }}",
                                        "region": "{{ workload.region }}"}}     # 'nothing': .get's default
    save = loaded.playbook.workflow[2].tool[0].config["command"]
    assert save.count("{{ execution_number }}") == 2 and "'{{ execution_id }}'" in save
    codes = {(d.code, d.line) for d in loaded.warnings}
    assert ("NTL321", 12) in codes and ("NTL323", 22) in codes, loaded.warnings


def test_a_task_that_declares_context_is_left_alone_and_a_dynamic_read_warns():
    declared = PLAYBOOK.replace("      kind: python\n      code: |", "      kind: python\n      input: {context: {}}\n"
                                                                    "      code: |")
    loaded = load_playbook_text(declared, source="p.yaml")
    assert loaded.playbook.workflow[1].tool[0].config["input"] == {"context": {}}
    assert "NTL321" not in {d.code for d in loaded.warnings}
    dynamic = PLAYBOOK.replace("missing = context.get('nothing', 'dflt')", "missing = sorted(context)")
    diags = validate_text(dynamic, "p.yaml")
    [warning] = [d for d in diags if d.code == "NTL322"]
    assert warning.severity == "warning" and warning.line == 12 and "line 4 of the code" in warning.message
    assert "NameError" in warning.message and "input" in warning.fix


def test_the_fixtures_that_read_context_validate_with_the_warning():
    from tests.dsl.e2e_fates import fates

    by_path = {f.path: f for f in fates()}
    for path in ("fixtures/playbooks/vars_test/test_vars_template_access.yaml",
                 "fixtures/playbooks/save_storage_test/save_all_storage_types.yaml",
                 "fixtures/playbooks/pagination/loop_with_pagination/test_loop_with_pagination.yaml"):
        assert by_path[path].valid, path




GO_TEMPLATE = """\
workflow:
  - step: df
    tool:
      kind: shell
      cmds:
        - "docker system df --format '{{`{{json .}}`}}' --x {{ workload.n }} {{`{{.Size}}`}}"
"""


def test_go_template_quoting_passes_through_unchanged_as_noetl_does():
    """NoETL 5.3.2 leaves `{{`...`}}` as written and renders the rest; so does a render here."""
    from noetl_temporal.templates import render

    assert [d for d in validate_text(GO_TEMPLATE, "g.yaml") if d.is_error] == []
    [cmd] = load_playbook_text(GO_TEMPLATE).playbook.workflow[0].tool[0].config["cmds"]
    assert render(cmd, {"workload": {"n": 3}}) == \
        "docker system df --format '{{`{{json .}}`}}' --x 3 {{`{{.Size}}`}}"
    broken = GO_TEMPLATE.replace("{{ workload.n }}", "{{ workload.n ")   # a real Jinja error still is one
    assert "NTL701" in {d.code for d in validate_text(broken, "g.yaml")}


def test_an_arcs_cond_is_refused_by_name_with_the_when_to_write():
    """NoETL 5.3.2 ignores an arc's `cond:` and takes the arc: refused (NTL324), not run differently."""
    text = ("workflow:\n  - step: a\n    tool: {kind: noop}\n    next:\n      arcs:\n"
            "        - {step: b, cond: exit_code == 100}\n  - step: b\n    tool: {kind: noop}\n")
    [error] = [d for d in validate_text(text, "c.yaml") if d.is_error]
    assert (error.code, error.line) == ("NTL324", 6)
    assert error.fix == 'write `when: "{{ exit_code == 100 }}"` (a template) instead of `cond:`'
