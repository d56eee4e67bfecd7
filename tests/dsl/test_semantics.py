"""Semantic checks: references, scopes, limits, reachability and template syntax."""

from __future__ import annotations

import pytest

from .helpers import codes, diags, errors, find, load, playbook, warnings

# (id, body, code, severity, text at the reported position, path, message fragment)
CASES = [
    ("duplicate-step",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: a}]}\n"
     "  - step: a\n    tool: {kind: noop}\n",
     "NTL202", "error", ("a\n    tool: {kind: noop}\n", 1), "workflow[1].step", "workflow[0]"),
    ("duplicate-task-label",
     "workflow:\n  - step: a\n    tool:\n      - name: x\n        kind: noop\n      - name: x\n        kind: noop\n",
     "NTL304", "error", ("name: x\n        kind: noop\n", 1), "workflow[0].tool[1].name", "twice"),
    ("duplicate-label-mapping-items",
     "workflow:\n  - step: a\n    tool:\n      - x: {kind: noop}\n      - x: {kind: noop}\n",
     "NTL304", "error", ("x: {kind: noop}\n", 1), "workflow[0].tool[1].x", "twice"),
    ("arc-to-missing-step",
     "workflow:\n  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: fetsh}]}\n"
     "  - step: fetch\n    tool: {kind: noop}\n",
     "NTL502", "error", "fetsh", "workflow[0].next.arcs[0].step", "did you mean 'fetch'"),
    ("entry-step-missing",
     "executor: {spec: {entry_step: begin}}\nworkflow:\n  - step: begin_here\n    tool: {kind: noop}\n",
     "NTL503", "error", "begin}", "executor.spec.entry_step", "did you mean 'begin_here'"),
    ("final-step-missing",
     "executor: {spec: {final_step: sumary}}\nworkflow:\n  - step: summary\n    tool: {kind: noop}\n",
     "NTL504", "error", "sumary", "executor.spec.final_step", "did you mean 'summary'"),
    ("jump-to-unknown-label",
     "workflow:\n  - step: a\n    tool:\n      - name: claim_batch\n        kind: noop\n      - name: save\n"
     "        kind: noop\n        spec:\n          policy:\n            rules:\n"
     "              - else: {then: {do: jump, to: claim}}\n",
     "NTL402", "error", "claim}", "workflow[0].tool[1].spec.policy.rules[0].else.then.to",
     "did you mean 'claim_batch'"),
    ("jump-to-label-of-other-step",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec: {policy: {rules: [{then: {do: jump, to: other}}]}}\n"
     "    next: {arcs: [{step: b}]}\n  - step: b\n    tool: [{name: other, kind: noop}]\n",
     "NTL402", "error", "other}", "workflow[0].tool.spec.policy.rules[0].then.to", "not a task of this step"),
    ("jump-without-to",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec: {policy: {rules: [{then: {do: jump}}]}}\n",
     "NTL403", "error", "then: {do: jump}", "workflow[0].tool.spec.policy.rules[0].then", "to"),
    ("retry-knobs-on-continue",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - when: \"{{ x }}\"\n              then: {do: continue, attempts: 3}\n",
     "NTL404", "warning", "attempts", "workflow[0].tool.spec.policy.rules[0].then.attempts", "ignored"),
    ("backoff-on-fail",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - else: {then: {do: fail, backoff: fixed}}\n",
     "NTL404", "warning", "backoff", "workflow[0].tool.spec.policy.rules[0].else.then.backoff", "ignored"),
    ("to-on-continue",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - else: {then: {do: continue, to: x}}\n",
     "NTL405", "warning", "to: x", "workflow[0].tool.spec.policy.rules[0].else.then.to", "ignored"),
    ("rules-after-else",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - else: {then: {do: continue}}\n            - when: \"{{ x }}\"\n              then: {do: fail}\n",
     "NTL406", "warning", "when: \"{{ x }}\"", "workflow[0].tool.spec.policy.rules[1]", "never match"),
    ("unreachable-step",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n  - step: island\n    tool: {kind: noop}\n",
     "NTL505", "warning", "step: island", "workflow[1]", "can never run"),
    ("arc-to-final-step",
     "executor: {spec: {final_step: wrap}}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"
     "    next: {arcs: [{step: wrap}]}\n  - step: wrap\n    tool: {kind: noop}\n",
     "NTL506", "warning", "wrap}]", "workflow[0].next.arcs[0].step", "final step"),
    ("join-arcs-set-the-same-args-key",
     "workflow:\n  - step: s\n    tool: {kind: noop}\n"
     "    next: {spec: {mode: inclusive}, arcs: [{step: a}, {step: b}]}\n"
     "  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: j, args: {x: 1, same: 1}}]}\n"
     "  - step: b\n    tool: {kind: noop}\n    next: {arcs: [{step: j, args: {x: 2, same: 1}}]}\n"
     "  - step: j\n    tool: {kind: noop}\n",
     "NTL507", "warning", "x: 2", "workflow[2].next.arcs[0].args.x", "args._upstreams"),
    ("max-in-flight-above-limit",
     "workflow:\n  - step: a\n    loop: {in: [1], spec: {mode: parallel, max_in_flight: 5000}}\n    tool: {kind: noop}\n",
     "NTL601", "error", "5000", "workflow[0].loop.spec.max_in_flight", "1000"),
    ("max-in-flight-alias-above-limit",
     "workflow:\n  - step: a\n    loop: {in: [1], mode: parallel, max_in_flight: 1001}\n    tool: {kind: noop}\n",
     "NTL601", "error", "1001", "workflow[0].loop.max_in_flight", "1000"),
    ("set-iter-outside-loop-task",
     "workflow:\n  - step: a\n    tool: {kind: noop, set: {iter.page: 2}}\n",
     "NTL602", "warning", "iter.page", 'workflow[0].tool.set["iter.page"]', "no loop"),
    ("set-iter-outside-loop-policy",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - else:\n                then:\n                  set_iter: {n: 1}\n",
     "NTL602", "warning", "n: 1", "workflow[0].tool.spec.policy.rules[0].else.then.set_iter.n", "no loop"),
    # issue 37: an arc's or a step's own `iter.*` was dropped at run time (a warning outside a
    # loop, nothing inside one); now refused wherever the step is
    ("set-iter-on-arc-from-non-loop",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: b, set: {iter.x: 1}}]}\n"
     "  - step: b\n    tool: {kind: noop}\n",
     "NTL605", "error", "iter.x", 'workflow[0].next.arcs[0].set["iter.x"]', "no iteration"),
    ("set-iter-on-arc-from-a-loop-step",
     "workflow:\n  - step: a\n    loop: {in: [1], iterator: x}\n    tool: {kind: noop}\n"
     "    next: {arcs: [{step: b, set: {iter.x: 1}}]}\n  - step: b\n    tool: {kind: noop}\n",
     "NTL605", "error", "iter.x", 'workflow[0].next.arcs[0].set["iter.x"]', "no iteration"),
    ("set-iter-on-a-loop-step-itself",
     "workflow:\n  - step: a\n    loop: {in: [1], iterator: x}\n    tool: {kind: noop}\n"
     "    set: {iter.seen: true}\n",
     "NTL605", "error", "iter.seen", 'workflow[0].set["iter.seen"]', "no iteration"),
    ("guard-without-template",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: b, when: ctx.ready}]}\n"
     "  - step: b\n    tool: {kind: noop}\n",
     "NTL408", "warning", "ctx.ready", "workflow[0].next.arcs[0].when", "constant"),
    ("template-syntax-error-in-arc",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: b, when: \"{{ ctx.n > }}\"}]}\n"
     "  - step: b\n    tool: {kind: noop}\n",
     "NTL701", "error", "\"{{ ctx.n > }}\"", "workflow[0].next.arcs[0].when", "syntax"),
    ("template-syntax-error-in-code",
     "workflow:\n  - step: a\n    tool:\n      kind: python\n      code: |\n        x = 1\n        {% if %}\n",
     "NTL701", "error", "|", "workflow[0].tool.code", "line 2 of the template"),
    ("template-syntax-error-in-workload",
     "workload: {greeting: \"hello {{ name \"}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n",
     "NTL701", "error", "\"hello", "workload.greeting", "syntax"),
    ("template-syntax-error-in-set-key",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    set: {ctx.n: \"{{ (1 }}\"}\n",
     "NTL701", "error", "\"{{ (1", 'workflow[0].set["ctx.n"]', "syntax"),
]


@pytest.mark.parametrize("body,code,severity,needle,path,fragment",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_semantic_check(body, code, severity, needle, path, fragment):
    text = playbook(body)
    found = [d for d in diags(text) if d.code == code]
    assert found, f"expected {code}, got {[str(d) for d in diags(text)]}"
    diag = found[0]
    assert diag.severity == severity
    needle, nth = needle if isinstance(needle, tuple) else (needle, 0)
    assert (diag.line, diag.col) == find(text, needle, nth)
    assert diag.path == path
    assert fragment in f"{diag.message} {diag.fix}"


def test_warnings_do_not_stop_loading():
    loaded = load("workflow:\n  - step: a\n    tool: {kind: noop}\n  - step: island\n    tool: {kind: noop}\n")
    assert codes(loaded.warnings) == ["NTL505"]


# Shapes that are fine and must produce no diagnostic at all.
CLEAN = [
    ("jump-to-previous-and-label",
     "workflow:\n  - step: a\n    tool:\n      - name: first\n        kind: noop\n      - name: second\n"
     "        kind: noop\n        spec:\n          policy:\n            rules:\n"
     "              - when: \"{{ ctx.x }}\"\n                then: {do: jump, to: previous}\n"
     "              - else: {then: {do: jump, to: first}}\n"),
    ("final-step-not-reached-by-arcs-is-reachable",
     "executor: {spec: {final_step: wrap, entry_step: a}}\nworkflow:\n  - step: wrap\n    tool: {kind: noop}\n"
     "  - step: a\n    tool: {kind: noop}\n"),
    ("set-ctx-in-parallel-loop",
     "workflow:\n  - step: a\n    loop: {in: [1, 2], iterator: item, spec: {mode: parallel, max_in_flight: 1000}}\n"
     "    tool: {kind: noop, set: {ctx.last: \"{{ iter.item }}\", iter.seen: true}}\n"),
    ("inclusive-fanout-without-join",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next:\n      spec: {mode: inclusive}\n"
     "      arcs: [{step: b}, {step: c}]\n  - step: b\n    tool: {kind: noop}\n  - step: c\n    tool: {kind: noop}\n"),
    ("self-loop-pagination",
     "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: a, when: \"{{ ctx.more }}\"}, {step: b}]}\n"
     "  - step: b\n    tool: {kind: noop}\n"),
    ("retry-knobs-on-retry",
     "workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n"
     "            - when: \"{{ output.status == 'error' }}\"\n"
     "              then: {do: retry, attempts: 4, backoff: linear, delay: 1, max_delay: 5}\n"),
    ("boolean-guards", "workflow:\n  - step: a\n    tool: {kind: noop}\n    next: {arcs: [{step: a, when: false}]}\n"),
    ("python-code-with-braces",
     "workflow:\n  - step: a\n    tool:\n      kind: python\n      code: |\n        d = {'a': {'b': 1}}\n"
     "        print(f\"{d['a']}\")\n"),
]


@pytest.mark.parametrize("body", [pytest.param(c[1], id=c[0]) for c in CLEAN])
def test_clean_playbooks_have_no_diagnostics(body):
    assert [str(d) for d in diags(playbook(body))] == []


def test_semantic_errors_are_all_reported_together():
    text = playbook("executor: {spec: {entry_step: nope}}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"
                    "    next: {arcs: [{step: x}, {step: y}]}\n  - step: a\n    tool: {kind: noop}\n")
    assert sorted(codes(errors(text))) == ["NTL202", "NTL502", "NTL502", "NTL503"]
    assert warnings(text) == []


def test_sequential_convergence_with_the_same_args_key_is_no_join_warning():
    # issue 10: s1 -> notify and s1 -> s2 -> notify run notify once per token
    body = ("workflow:\n  - step: s1\n    tool: {kind: noop}\n"
            "    next: {spec: {mode: inclusive}, arcs: [{step: notify, args: {stage: 1}}, {step: s2}]}\n"
            "  - step: s2\n    tool: {kind: noop}\n    next: {arcs: [{step: notify, args: {stage: 2}}]}\n"
            "  - step: notify\n    tool: {kind: noop}\n")
    assert "NTL507" not in codes(diags(playbook(body)))
