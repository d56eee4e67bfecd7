"""Templates are parsed once per distinct expression (dsl/template_scan.py), with the same
answers as parsing each template whole: syntax errors with Jinja's own message, and the
names and fields a template reads (NTL702/NTL703)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text
from noetl_temporal.dsl.template_names import _parts_reads, _reads, _whole_reads
from noetl_temporal.dsl.template_scan import expressions, operations, syntax_problem
from noetl_temporal.templates import check_syntax, is_template, operations_in
from tests.support.corpus import NOETL, NOETL_E2E

from .helpers import codes, playbook

# Each shape the cutting must leave to Jinja, or get right.
EDGES = [
    "{{ ctx.x == 17 }}", "echo {{ ctx.a }} 17 {{ b.c }}", "{{ ctx['1'] }}", "{{ x[01] }}", "{{ 007 }}",
    "{{ 1_000 + s1 }}", "{{ 0x1F }}", "{{{ x }}", "{{ x }}}", "{{- x }}", "{{ x -}}", "{{+ x }}",
    "{{ 'a }} b' }}", "{{ '{{json .}}' }}", "{% if x %}{{ y }}{% endif %}", "{# c #}{{ x }}", "{{ x",
    "{{ }}", "{{ x | default(1) }} {{ x.y }}", "{{ a }} {% set a = 1 %}{{ a }}", "{{ ns.v is defined }}",
    "{{ x.1 }}", "{{ 1.5 * y }}", "a {{ b }} c {{ d(e, 2) }}", "{{`{{json .}}`}}", "{{ x }} {#",
    "{{#}}", "a { {{ x }}", "{{ x }}{", "{{ x }} {{", "{{ x }}{% y", "%}{{ x }}", "{ {{ x }} }",
]


def _templates():
    for folder in (NOETL, NOETL_E2E):
        for path in sorted(folder.rglob("*.yaml")):
            text = path.read_text(encoding="utf-8")
            yield from (line for line in text.splitlines() if is_template(line))


@pytest.mark.parametrize("text", EDGES)
def test_each_edge_gets_the_whole_template_answer(text):
    assert (syntax_problem(text) is None) == (check_syntax(text) is None), text
    if syntax_problem(text) is not None:
        assert syntax_problem(text) == check_syntax(text)  # Jinja's message, the template's line
    whole = _whole_reads(text)
    assert _reads(text) == ([] if whole is None else _reads_of(whole)), text


def _reads_of(found):  # the guard rule of template_names._reads
    optional = {(name, field) for name, field, guarded in found if guarded}
    return list(dict.fromkeys((name, field) for name, field, _ in found
                              if (name, None) not in optional and (name, field) not in optional))


def test_every_corpus_template_line_gets_the_same_answers():
    """Every line of NoETL's playbooks with a template (3,000 of them): same syntax verdict
    and same reads as the whole-template parse, whichever path it takes."""
    seen = cut = 0
    for text in _templates():
        seen += 1
        assert (syntax_problem(text) is None) == (check_syntax(text) is None), text
        whole = _whole_reads(text)
        assert _reads(text) == ([] if whole is None else _reads_of(whole)), text
        parts = expressions(text)
        if parts is not None and _parts_reads(parts) is not None:
            cut += 1
    assert seen > 1000 and cut > seen // 2, (seen, cut)


def test_numbers_are_one_expression_and_quoted_digits_are_not():
    assert expressions("{{ ctx.x == 17 }}") == expressions("{{ ctx.x == 4 }}") == (" ctx.x == 0 ",)
    assert expressions("{{ ctx['1'] }}") == (" ctx['1'] ",)
    assert expressions("{% if x %}{{ y }}{% endif %}") is None
    assert expressions("{{{ x }}") is None and expressions("{{- x }}") is None


def test_an_error_in_a_repeated_template_keeps_its_file_line_col():
    """Among many steps parsed from the cache, the one bad template is located exactly."""
    steps = "".join(f"""
          - step: s{i}
            tool: {{kind: noop}}
            next: {{arcs: [{{step: s{i + 1}, when: "{{{{ ctx.x == {i} }}}}"}}]}}""" for i in range(50))
    text = playbook(f"""
        workflow:{steps}
          - step: s50
            tool: {{kind: noop}}
            next: {{arcs: [{{step: s51, when: "{{{{ ctx.x == == 3 }}}}"}}]}}
          - step: s51
            tool: {{kind: shell, cmd: "echo {{{{ nmae }}}}"}}
        """)
    found = validate_text(text, "big.yaml")
    assert codes(found) == ["NTL701"], found
    bad = found[0]
    line = text.splitlines()[bad.line - 1]
    assert "ctx.x == == 3" in line and line[bad.col - 1] == '"', (bad.line, bad.col, line)
    assert "line 1 of the template" in bad.message


def test_the_parser_lists_the_templates_a_walk_of_the_document_finds():
    """The template checks read the parser's list instead of walking the document again:
    the same (path, text) pairs in the same order, for every corpus file; a `<<` merge
    makes the list absent (the checks walk then)."""
    from noetl_temporal.dsl.diagnostics import Reporter
    from noetl_temporal.dsl.template_names import _strings
    from noetl_temporal.dsl.yaml_loader import parse_yaml

    listed = 0
    for folder in (NOETL, NOETL_E2E):
        for path in sorted(folder.rglob("*.yaml")):
            parsed = parse_yaml(path.read_text(encoding="utf-8"), Reporter())
            if parsed is None or parsed.templates is None:
                continue
            walked = [(where, text) for text, where in _strings(parsed.data, "")]
            assert parsed.templates == walked, path
            listed += 1
    assert listed > 150
    merged = parse_yaml("base: &b {a: '{{ x }}'}\nuse:\n  <<: *b\n  a: '{{ y }}'\n", Reporter())
    assert merged is not None and merged.templates is None


def test_a_merged_mapping_still_has_its_templates_checked():
    text = playbook("""
        workflow:
          - step: start
            tool: {kind: noop}
            next: {arcs: [{step: end, when: "{{ ctx.x == == 1 }}"}]}
          - step: end
            tool:
              <<: {kind: noop}
        """)
    found = validate_text(text, "m.yaml")
    assert codes(found) == ["NTL701"], found
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "== == 1" in row)
    assert (found[0].path, found[0].line) == ("workflow[0].next.arcs[0].when", line)


@pytest.mark.parametrize("text", EDGES + ["{{ x | map('urlize') | list }} {{ y is number }}",
                                          "{{ rows | selectattr('a', 'equalto', 3) | sum(attribute='b') }}"])
def test_the_operations_of_each_edge_are_the_whole_templates(text):
    assert operations(text) == operations_in(text), text


def test_a_large_playbook_parses_each_distinct_expression_once(monkeypatch):
    """The task-only filter check (NTL706) read every template with a whole Jinja parse:
    half the time of validating a large playbook (issue 39). Now 400 templates of two
    distinct expressions cost a handful of parses, whatever the text around them."""
    from jinja2 import Environment

    from benchmarks.probes.validate_speed import big_playbook
    parses = []
    real = Environment.parse
    monkeypatch.setattr(Environment, "parse", lambda self, source, *a, **k: parses.append(source)
                        or real(self, source, *a, **k))
    text, steps = big_playbook(32_000)
    assert steps >= 200
    assert [d.code for d in validate_text(text, "big.yaml") if d.severity == "error"] == []
    assert len(parses) < 20, parses[:30]


def test_a_task_only_filter_in_a_repeated_guard_is_still_located():
    found = validate_text(playbook("""
        workflow:
          - step: a
            tool: {kind: noop}
            next: {arcs: [{step: b, when: "{{ ctx.x | urlize == 1 }}"}]}
          - step: b
            tool: {kind: noop}
            next: {arcs: [{step: end, when: "{{ ctx.x | urlize == 2 }}"}]}
          - step: end
            tool: {kind: noop}
    """), "p.yaml")
    assert [(d.code, d.line, d.col) for d in found if d.code == "NTL706"] == [
        ("NTL706", 8, 35), ("NTL706", 11, 37)], found
