"""Refused constructs: each gets its own code, the position of the offending node and a fix."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.errors import PlaybookInvalid

from .helpers import HEADER, codes, errors, find, playbook, warnings

NOOP_B = "\n  - step: b\n    tool: {kind: noop}\n"

# (id, body after the header, expected code, text whose first character is the reported position,
#  expected JSON path, a fragment the message or fix must contain)
CASES = [
    ("root-vars", "vars: {a: 1}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n",
     "NTL102", "vars:", "vars", "workload"),
    ("unknown-root-key", "workflows: []\nworkflow:\n  - step: a\n    tool: {kind: noop}\n",
     "NTL101", "workflows:", "workflows", "did you mean 'workflow'"),
    ("unknown-root-key-not-an-identifier", "meta-data: {}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n",
     "NTL101", "meta-data:", '["meta-data"]', "did you mean 'metadata'"),
    ("step-when", "workflow:\n  - step: a\n    when: \"{{ ctx.ok }}\"\n    tool: {kind: noop}\n",
     "NTL204", "when:", "workflow[0].when", "admit"),
    ("step-case", "workflow:\n  - step: a\n    tool: {kind: noop}\n    case: []\n",
     "NTL205", "case:", "workflow[0].case", "next: {arcs"),
    ("step-retry", "workflow:\n  - step: a\n    tool: {kind: noop}\n    retry: {max_attempts: 3}\n",
     "NTL206", "retry:", "workflow[0].retry", "do: retry"),
    ("step-sink", "workflow:\n  - step: a\n    tool: {kind: noop}\n    sink: {kind: postgres}\n",
     "NTL207", "sink:", "workflow[0].sink", "storage tool task"),
    ("step-eval", "workflow:\n  - step: a\n    tool: {kind: noop}\n    eval: []\n",
     "NTL208", "eval:", "workflow[0].eval", "spec.policy.rules"),
    ("task-expr", "workflow:\n  - step: a\n    tool: {kind: noop, expr: x}\n",
     "NTL208", "expr:", "workflow[0].tool.expr", "when:"),
    ("task-retry", "workflow:\n  - step: a\n    tool:\n      - name: t\n        kind: noop\n        retry: 3\n",
     "NTL206", "retry:", "workflow[0].tool[0].retry", "do: retry"),
    ("task-case", "workflow:\n  - step: a\n    tool: {kind: noop, case: []}\n",
     "NTL205", "case:", "workflow[0].tool.case", "next"),
    ("task-sink", "workflow:\n  - step: a\n    tool: {kind: noop, sink: {}}\n",
     "NTL207", "sink:", "workflow[0].tool.sink", "storage"),
    ("task-when", "workflow:\n  - step: a\n    tool: {kind: noop, when: \"{{ x }}\"}\n",
     "NTL204", "when:", "workflow[0].tool.when", "jump"),
    ("next-string", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: b" + NOOP_B,
     "NTL501", "b\n", "workflow[0].next", "arcs: [{step: b}]"),
    ("next-list-of-strings", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: [b]" + NOOP_B,
     "NTL501", "[b]", "workflow[0].next", "arcs: [{step: b}]"),
    ("next-list-of-steps", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next:\n      - step: b" + NOOP_B,
     "NTL501", "- step: b", "workflow[0].next", "arcs: [{step: b}]"),
    ("next-single-arc", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {step: b}" + NOOP_B,
     "NTL501", "next:", "workflow[0].next", "arcs: [{step: b}]"),
    ("spec-next-mode", "workflow:\n  - step: a\n    tool: {kind: noop}\n    spec: {next_mode: inclusive}\n",
     "NTL212", "next_mode", "workflow[0].spec.next_mode", "mode: inclusive"),
    ("step-type", "workflow:\n  - step: a\n    type: python\n",
     "NTL209", "type:", "workflow[0].type", "tool: {kind: python"),
    ("task-type-without-kind", "workflow:\n  - step: a\n    tool: {type: http}\n",
     "NTL209", "type:", "workflow[0].tool.type", "kind: http"),
    ("tool-without-kind", "workflow:\n  - step: a\n    tool: {url: http://x}\n",
     "NTL301", "tool:", "workflow[0].tool", "kind"),
    ("list-task-without-kind", "workflow:\n  - step: a\n    tool:\n      - name: t\n        url: x\n",
     "NTL301", "name: t\n        url", "workflow[0].tool[0]", "kind"),
    ("unknown-kind", "workflow:\n  - step: a\n    tool: {kind: htttp}\n",
     "NTL302", "htttp", "workflow[0].tool.kind", "did you mean 'http'"),
    ("step-without-tool", "workflow:\n  - step: a\n    desc: only a description\n",
     "NTL211", "step: a", "workflow[0]", "kind: noop"),
    ("command-on-step", "workflow:\n  - step: a\n    tool: {kind: shell}\n    command: echo hi\n",
     "NTL210", "command:", "workflow[0].command", "under `tool:`"),
    ("code-on-step", "workflow:\n  - step: a\n    tool: {kind: python}\n    code: x = 1\n",
     "NTL210", "code:", "workflow[0].code", "under `tool:`"),
    ("url-on-step", "workflow:\n  - step: a\n    tool: {kind: http}\n    url: http://x\n",
     "NTL210", "url:", "workflow[0].url", "under `tool:`"),
    ("unknown-step-key", "workflow:\n  - step: a\n    tool: {kind: noop}\n    nxt: {}\n",
     "NTL203", "nxt:", "workflow[0].nxt", "did you mean 'next'"),
    ("step-set-without-prefix", "workflow:\n  - step: a\n    tool: {kind: noop}\n    set: {total: 1}\n",
     "NTL213", "total:", "workflow[0].set.total", "ctx.total"),
    ("tool-is-string", "workflow:\n  - step: a\n    tool: python\n",
     "NTL303", "python", "workflow[0].tool", "mapping"),
    ("tool-empty-list", "workflow:\n  - step: a\n    tool: []\n",
     "NTL303", "[]", "workflow[0].tool", "empty"),
    ("tool-item-string", "workflow:\n  - step: a\n    tool:\n      - noop\n",
     "NTL303", "noop", "workflow[0].tool[0]", "mapping"),
    ("label-previous", "workflow:\n  - step: a\n    tool:\n      - name: previous\n        kind: noop\n",
     "NTL305", "name: previous", "workflow[0].tool[0].name", "reserved"),
    ("label-not-string", "workflow:\n  - step: a\n    tool:\n      - name: 3\n        kind: noop\n",
     "NTL305", "name: 3", "workflow[0].tool[0].name", "non-empty string"),
    ("workbook-missing-entry",
     "workbook:\n  - name: compute\n    tool: {kind: noop}\nworkflow:\n  - step: a\n    tool: {kind: workbook, name: compte}\n",
     "NTL306", "name: compte", "workflow[0].tool.name", "did you mean 'compute'"),
    ("workbook-entry-without-kind",
     "workbook:\n  - name: w\n    tool: {code: x}\nworkflow:\n  - step: a\n    tool: {kind: workbook, name: w}\n",
     "NTL307", "tool: {code", "workbook[0].tool", "kind"),
    ("workbook-entry-is-workbook",
     "workbook:\n  - name: w\n    tool: {kind: workbook, name: w}\nworkflow:\n  - step: a\n    tool: {kind: workbook, name: w}\n",
     "NTL307", "kind: workbook", "workbook[0].tool.kind", "another workbook"),
    ("rule-not-mapping",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec: {policy: {rules: [retry]}}\n",
     "NTL401", "retry]", "workflow[0].tool.spec.policy.rules[0]", "mapping"),
    ("rule-without-then",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - when: \"{{ x }}\"\n",
     "NTL401", "when:", "workflow[0].tool.spec.policy.rules[0]", "then"),
    ("rule-when-and-else",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - when: \"{{ x }}\"\n              else: {then: {do: fail}}\n",
     "NTL401", "when:", "workflow[0].tool.spec.policy.rules[0]", "both"),
    ("then-not-mapping",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - when: \"{{ x }}\"\n              then: retry\n",
     "NTL401", "retry", "workflow[0].tool.spec.policy.rules[0].then", "mapping"),
    ("admit-without-allow",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    spec:\n      policy:\n        admit:\n          rules:\n"
     "            - when: \"{{ x }}\"\n              then: {}\n",
     "NTL407", "then: {}", "workflow[0].spec.policy.admit.rules[0].then", "allow"),
    ("loop-without-in", "workflow:\n  - step: a\n    loop: {iterator: x}\n    tool: {kind: noop}\n",
     "NTL603", "loop:", "workflow[0].loop", "in:"),
    ("loop-not-mapping", "workflow:\n  - step: a\n    loop: items\n    tool: {kind: noop}\n",
     "NTL603", "items", "workflow[0].loop", "in:"),
    ("workflow-missing", "workload: {}\n", "NTL103", "apiVersion", "", "workflow"),
    ("workflow-empty", "workflow: []\n", "NTL103", "[]", "workflow", "workflow"),
    ("workflow-mapping", "workflow: {a: 1}\n", "NTL103", "{a: 1}", "workflow", "workflow"),
    ("workload-list", "workload: [1]\nworkflow:\n  - step: a\n    tool: {kind: noop}\n",
     "NTL104", "[1]", "workload", "mapping"),
    ("step-not-mapping", "workflow:\n  - just_a_name\n", "NTL104", "just_a_name", "workflow[0]", "mapping"),
    ("step-without-name", "workflow:\n  - desc: x\n    tool: {kind: noop}\n",
     "NTL201", "desc:", "workflow[0]", "step"),
    ("model-bad-enum",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - else: {then: {do: retyr}}\n",
     "NTL901", "retyr", "workflow[0].tool.spec.policy.rules[0].else.then.do", "retry"),
    ("model-unknown-key",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - when: \"{{ x }}\"\n              then: {do: retry, atempts: 3}\n",
     "NTL902", "atempts", "workflow[0].tool.spec.policy.rules[0].then.atempts", "did you mean 'attempts'"),
    ("model-missing-arc-step",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next:\n      arcs:\n        - when: \"{{ x }}\"\n",
     "NTL903", "when:", "workflow[0].next.arcs[0]", "'step'"),
    ("model-bad-mode", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {spec: {mode: paralel}}\n",
     "NTL901", "paralel", "workflow[0].next.spec.mode", "exclusive"),
    ("model-attempts-zero",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec: {policy: {rules: [{then: {do: retry, attempts: 0}}]}}\n",
     "NTL901", "0}", "workflow[0].tool.spec.policy.rules[0].then.attempts", "greater than or equal"),
    ("duplicate-root-key", "kind: Workflow\nworkflow:\n  - step: a\n    tool: {kind: noop}\n",
     "NTL010", "kind: Workflow", "kind", "duplicate"),
]


@pytest.mark.parametrize("body,code,needle,path,fragment", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_rejection(body, code, needle, path, fragment):
    text = playbook(body)
    found = [d for d in errors(text) if d.code == code]
    assert found, f"expected {code}, got {[str(d) for d in errors(text)]}"
    diag = found[0]
    assert (diag.line, diag.col) == find(text, needle)
    assert diag.path == path
    assert fragment in f"{diag.message} {diag.fix}"
    assert diag.file == "pb.yaml"
    with pytest.raises(PlaybookInvalid) as info:
        load_playbook_text(text, "pb.yaml")
    assert code in codes(info.value.diagnostics)


def test_kind_must_be_playbook():
    text = "apiVersion: noetl.io/v2\nkind: Workflow\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"
    (diag,) = errors(text)
    assert (diag.code, diag.path, diag.line, diag.col) == ("NTL901", "kind", 2, 7)


def test_api_version_mismatch_is_a_warning():
    text = "apiVersion: noetl.io/v1\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"
    assert codes(errors(text)) == []
    (diag,) = warnings(text)
    assert (diag.code, diag.line, diag.col) == ("NTL105", 1, 13)


def test_type_field_reports_no_second_missing_tool_error():
    text = playbook("workflow:\n  - step: a\n    type: http\n    url: x\n")
    assert codes(errors(text)) == ["NTL209", "NTL210"]


def test_every_error_is_reported_not_just_the_first():
    text = HEADER + ("vars: {}\nworkflow:\n  - step: a\n    when: x\n    tool: {url: y}\n    next: b\n"
                     "  - step: b\n    type: http\n")
    assert codes(errors(text)) == ["NTL102", "NTL204", "NTL301", "NTL501", "NTL209"]


def test_str_form_names_file_line_col_code_path_and_fix():
    text = playbook("workflow:\n  - step: a\n    tool: {kind: noop}\n    next: end\n")
    (diag,) = errors(text)
    assert str(diag) == ("pb.yaml:8:11: NTL501 `next: end` is a step name, not a router (workflow[0].next)"
                         " — fix: write `next: {spec: {mode: exclusive}, arcs: [{step: end}]}`")
    assert diag.to_dict() == {"code": "NTL501", "severity": "error", "message": diag.message,
                              "path": "workflow[0].next", "line": 8, "col": 11, "file": "pb.yaml",
                              "fix": diag.fix}
