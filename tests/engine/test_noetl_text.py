"""A value printed inside text is written as NoETL writes it (``templates.text``): ``true``,
``false``, ``null``, JSON for lists and mappings. A template that is one ``{{ expr }}`` keeps
the native value, and comparisons stay Python's. Executions started before the behaviour
``noetl-text`` keep Python's ``str()`` in the engine."""

from __future__ import annotations

import json

import pytest

from noetl_temporal.engine import CURRENT_BEHAVIOURS
from noetl_temporal.engine.behaviours import NOETL_TEXT
from noetl_temporal.templates import evaluate_condition, render, render_value
from noetl_temporal.templates.text import as_text, noetl_text_on, python_text

from .harness import run

SCOPE = {"flag": True, "off": False, "nothing": None, "n": 3, "x": 1.5,
         "items": [1, True, None, "it's", 'say "hi"'],
         "config": {"a": {"b": [False, None]}, "name": "ü"}}


@pytest.mark.parametrize("template,text", [
    ("[{{ flag }}]", "[true]"),
    ("[{{ off }}]", "[false]"),
    ("[{{ nothing }}]", "[null]"),
    ("[{{ n }} {{ x }}]", "[3 1.5]"),
    ("{{ items }}!", '[1, true, null, "it\'s", "say \\"hi\\""]!'),
    ("{{ config }}!", '{"a": {"b": [false, null]}, "name": "\\u00fc"}!'),
    ("{{ config.a }}!", '{"b": [false, null]}!'),
    ("{{ items[3] }} {{ items[4] }}", 'it\'s say "hi"'),          # strings print as they are
    ("{{ flag == true }} {{ n > 5 }}", "true false"),              # comparisons: Python's, printed
    ("{{ 'on' if flag else 'off' }}", "on"),
    ("{% if nothing is none %}none{% endif %}", "none"),
    ("({{ (1, 2) }})", "([1, 2])"),
    ("{{ flag | tojson }}", "true"),
    ("<{{ missing }}>", "<>"),                                     # undefined still prints empty
])
def test_values_print_as_noetl_writes_them(template, text):
    assert render(template, SCOPE) == text


def test_a_list_or_mapping_prints_as_json_that_reads_back():
    assert json.loads(render("={{ config }}", SCOPE)[1:]) == SCOPE["config"]
    assert json.loads(render("={{ items }}", SCOPE)[1:]) == SCOPE["items"]


@pytest.mark.parametrize("name", ["flag", "nothing", "items", "config"])
def test_one_expression_keeps_the_native_value(name):
    assert render("{{ " + name + " }}", SCOPE) == SCOPE[name]
    assert render("{{ " + name + " if true }}", SCOPE) == SCOPE[name]
    assert render_value({"v": "{{ " + name + " }}"}, SCOPE) == {"v": SCOPE[name]}


def test_guards_keep_python_semantics():
    assert evaluate_condition("{{ flag == true }}", SCOPE) == (True, None)
    assert evaluate_condition("{{ nothing is none }}", SCOPE) == (True, None)
    assert evaluate_condition("{{ items | length > 4 }}", SCOPE) == (True, None)
    assert evaluate_condition("{{ off }}", SCOPE) == (False, None)


def test_python_text_is_the_old_printing_and_ends_with_its_block():
    with python_text():
        assert not noetl_text_on()
        assert render("{{ flag }} {{ nothing }} {{ config.a }}", SCOPE) == "True None {'b': [False, None]}"
    assert noetl_text_on()
    assert render("{{ flag }} {{ nothing }}", SCOPE) == "true null"
    with python_text(False):
        assert noetl_text_on()


def test_as_text_leaves_strings_and_numbers_to_jinja():
    assert as_text("True") == "True" and as_text(3) == 3 and as_text(1.5) == 1.5


PB = """
workload: {flag: true, pair: {a: [1, null]}}
workflow:
  - step: start
    tool: {kind: shell, cmd: "test {{ workload.flag }} = true # {{ workload.pair }}"}
    set:
      ctx.line: "flag={{ workload.flag }}"
    next:
      arcs:
        - step: lower
          when: "{{ ctx.line == 'flag=true' }}"
          args: {said: "{{ workload.flag }}!"}
        - step: upper
  - step: lower
    tool: {kind: noop}
  - step: upper
    tool: {kind: noop}
"""


def test_the_engine_prints_noetl_text_for_a_new_execution():
    r = run(PB)
    assert r.ran[0].config["cmd"] == 'test true = true # {"a": [1, null]}'
    assert r.steps_started() == ["start", "lower"]
    fired = [e for e in r.events if e["event_type"] == "next.evaluated"][0]["payload"]["selected"]
    assert fired == [{"step": "lower", "args": {"said": "true!"}}]


def test_an_execution_started_before_noetl_text_keeps_python_text():
    r = run(PB, behaviours=[b for b in CURRENT_BEHAVIOURS if b != NOETL_TEXT])
    assert r.ran[0].config["cmd"] == "test True = true # {'a': [1, None]}"
    assert r.steps_started() == ["start", "upper"]
    assert noetl_text_on()   # the switch ends with the engine's step
