"""The source-form JSON Schema accepts the loadable corpus and rejects refused shapes."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from noetl_temporal.cli.main import main
from noetl_temporal.dsl import playbook_json_schema

from .helpers import CORPUS, playbook
from .test_corpus import FILES, REJECTED


@pytest.fixture(scope="module")
def validator(request):
    return jsonschema.Draft202012Validator(playbook_json_schema())


def test_schema_is_valid_draft_2020_12():
    schema = playbook_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_cli_prints_the_schema(capsys):
    assert main(["schema"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == playbook_json_schema()
    assert out.startswith('{\n  "$schema"')


@pytest.mark.parametrize("name", FILES)
def test_corpus_against_cli_schema(validator, name):
    data = yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]
    if name in REJECTED:
        assert problems, f"{name} should fail the schema"
    else:
        assert problems == []


ACCEPTED = [
    "workflow:\n  - step: a\n    tool: {kind: noop}\n",
    "workflow:\n  - step: a\n    tool:\n      - fetch: {kind: http, url: x}\n      - kind: python\n        code: x\n",
    "workflow:\n  - step: a\n    loop: {in: [1], mode: parallel, max_in_flight: 4}\n    tool: {kind: noop}\n"
    "    set: {ctx.a: 1, ctx.b: 2}\n    next: {arcs: [{step: a, set: {ctx.x: 1, y: 2}, when: true}]}\n",
    "workflow:\n  - step: a\n    spec: {policy: {admit: {rules: [{when: x, then: {allow: true}}, "
    "{else: {then: {allow: false}}}]}}}\n    tool: {kind: noop}\n",
    "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
    "            - when: x\n              then: {do: retry, backoff: fixed}\n"
    "            - else: {do: continue, set: {ctx.a: 1}}\n",
]

REFUSED = [
    ("next-string", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: end\n"),
    ("next-list", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: [{step: a}]\n"),
    ("tool-without-kind", "workflow:\n  - step: a\n    tool: {url: x}\n"),
    ("unknown-kind", "workflow:\n  - step: a\n    tool: {kind: htttp}\n"),
    ("step-type", "workflow:\n  - step: a\n    type: http\n"),
    ("step-when", "workflow:\n  - step: a\n    when: x\n    tool: {kind: noop}\n"),
    ("task-retry", "workflow:\n  - step: a\n    tool: {kind: noop, retry: {}}\n"),
    ("no-tool", "workflow:\n  - step: a\n"),
    ("root-vars", "vars: {}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"),
    ("next-mode", "workflow:\n  - step: a\n    spec: {next_mode: inclusive}\n    tool: {kind: noop}\n"),
    ("step-set-without-prefix", "workflow:\n  - step: a\n    tool: {kind: noop}\n    set: {x: 1}\n"),
    ("in-flight", "workflow:\n  - step: a\n    loop: {in: [], spec: {max_in_flight: 5000}}\n    tool: {kind: noop}\n"),
    # NTL310, NTL311: each kind's declared settings (tool_kinds/<kind>.py)
    ("tool-unknown-setting", "workflow:\n  - step: a\n    tool: {kind: http, url: x, metod: POST}\n"),
    ("tool-setting-type", "workflow:\n  - step: a\n    tool: {kind: http, url: x, headers: [a]}\n"),
]


@pytest.mark.parametrize("body", ACCEPTED)
def test_schema_accepts_dialect(validator, body):
    data = yaml.safe_load(playbook(body))
    assert [e.message for e in validator.iter_errors(data)] == []


@pytest.mark.parametrize("body", [pytest.param(b, id=i) for i, b in REFUSED])
def test_schema_refuses(validator, body):
    data = yaml.safe_load(playbook(body))
    assert list(validator.iter_errors(data))
