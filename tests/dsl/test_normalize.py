"""Every dialect alias of docs/dialect-aliases.md normalizes to the canonical model."""

from __future__ import annotations

import textwrap

import pytest

from noetl_temporal.dsl.normalize import rewrite_templates

from .helpers import codes, load, playbook, warnings

# ---------------------------------------------------------------- tool shapes

TOOL_SHAPES = [
    pytest.param(
        """
        workflow:
          - step: s
            tool: {kind: python, code: "x = 1"}
        """,
        [("s_task", "python", {"code": "x = 1"})], id="single-object"),
    pytest.param(
        """
        workflow:
          - step: s
            tool: {name: init, kind: noop}
        """,
        [("init", "noop", {})], id="single-object-named"),
    pytest.param(
        """
        workflow:
          - step: s
            tool:
              - name: a
                kind: http
                url: http://x
                method: GET
              - name: b
                kind: python
                code: pass
        """,
        [("a", "http", {"url": "http://x", "method": "GET"}), ("b", "python", {"code": "pass"})],
        id="named-list"),
    pytest.param(
        """
        workflow:
          - step: s
            tool:
              - kind: noop
              - name: middle
                kind: noop
              - kind: shell
                cmd: echo hi
        """,
        [("task_0", "noop", {}), ("middle", "noop", {}), ("task_2", "shell", {"cmd": "echo hi"})],
        id="unnamed-items-by-position"),
    pytest.param(
        """
        workflow:
          - step: s
            tool:
              - fetch: {kind: http, url: http://x}
              - save: {kind: postgres, command: "select 1", auth: pg}
        """,
        [("fetch", "http", {"url": "http://x"}), ("save", "postgres", {"command": "select 1", "auth": "pg"})],
        id="label-mapping-items"),
    pytest.param(
        """
        workflow:
          - step: s
            tool:
              kind: http
              url: http://x
              args: {a: 1}
              params: {p: 2}
              headers: {h: 3}
              input: {i: 4}
        """,
        [("s_task", "http", {"url": "http://x", "args": {"a": 1}, "params": {"p": 2}, "headers": {"h": 3},
                             "input": {"i": 4}})],
        id="config-keeps-every-other-key"),
    pytest.param(
        """
        workflow:
          - step: s
            tool: {kind: http, method: GET, endpoint: "http://api/x"}
        """,
        [("s_task", "http", {"method": "GET", "url": "http://api/x"})], id="http-endpoint-is-url"),
]


@pytest.mark.parametrize("body,expected", TOOL_SHAPES)
def test_tool_shapes(body, expected):
    step = load(body).playbook.workflow[0]
    assert [(t.name, t.kind, t.config) for t in step.tool] == expected


def test_endpoint_and_url_both_given_keeps_url_and_warns():
    text = playbook("""
        workflow:
          - step: s
            tool: {kind: http, url: http://a, endpoint: http://b}
        """)
    assert codes(warnings(text)) == ["NTL308"]
    from noetl_temporal.dsl import load_playbook_text
    assert load_playbook_text(text).playbook.workflow[0].tool[0].config == {"url": "http://a"}


# ---------------------------------------------------------------- workbook

WORKBOOK = """
workbook:
  - name: flag
    tool:
      kind: python
      input: {temperature_c: null, unit: C}
      code: result = 1
workflow:
  - step: s
    tool:
      kind: workbook
      name: flag
      input: {temperature_c: "{{ t }}"}
      spec:
        policy:
          rules:
            - else: {then: {do: continue}}
"""


def test_workbook_reference_is_replaced_by_entry_tool():
    task = load(WORKBOOK).playbook.workflow[0].tool[0]
    assert task.kind == "python"
    assert task.name == "flag"
    assert task.config == {"input": {"temperature_c": "{{ t }}", "unit": "C"}, "code": "result = 1"}
    assert task.spec.policy is not None and task.spec.policy.rules[0].when is None


def test_workbook_reference_in_list_keeps_label():
    pb = load("""
        workbook:
          - name: w
            tool: {kind: noop}
        workflow:
          - step: s
            tool:
              - step_one: {kind: workbook, name: w}
        """).playbook
    assert [(t.name, t.kind) for t in pb.workflow[0].tool] == [("step_one", "noop")]


# ---------------------------------------------------------------- set blocks

def test_task_set_splits_scopes():
    task = load("""
        workflow:
          - step: s
            loop: {in: [1, 2], iterator: n}
            tool:
              - name: a
                kind: noop
                set: {ctx.total: 1, iter.page: 2, fetch_result: "{{ output }}", ctx.deep.path: 3}
        """).playbook.workflow[0].tool[0]
    assert task.set_ctx == {"total": 1, "deep.path": 3}
    assert task.set_iter == {"page": 2}
    assert task.set_vars == {"fetch_result": "{{ output }}"}


def test_nested_scope_map_and_explicit_fields():
    task = load("""
        workflow:
          - step: s
            tool:
              kind: noop
              set: {ctx: {a: 1, b: 2}}
              set_ctx: {c: 3}
        """).playbook.workflow[0].tool[0]
    assert task.set_ctx == {"c": 3, "a": 1, "b": 2}


def test_explicit_field_wins_over_set_with_warning():
    text = playbook("""
        workflow:
          - step: s
            tool: {kind: noop, set_ctx: {a: 1}, set: {ctx.a: 2}}
        """)
    assert codes(warnings(text)) == ["NTL308"]


def test_arc_set_unprefixed_keys_become_args():
    arc = load("""
        workflow:
          - step: a
            tool: {kind: noop}
            next:
              arcs:
                - step: b
                  args: {x: 1}
                  set: {ctx.flag: true, y: 2}
          - step: b
            tool: {kind: noop}
        """).playbook.workflow[0].next.arcs[0]
    assert arc.set_ctx == {"flag": True}
    assert arc.set_iter == {}  # an arc's `iter.*` is refused since issue 37 (NTL605, test_semantics)
    assert arc.args == {"x": 1, "y": 2}
    assert arc.set_vars == {}


def test_step_set_goes_to_step_patches():
    step = load("""
        workflow:
          - step: s
            tool: {kind: noop}
            set: {ctx.page: 1}
        """).playbook.workflow[0]
    assert step.set_ctx == {"page": 1} and step.set_vars == {}


# ---------------------------------------------------------------- task policy rules

def _rules(rules_yaml: str):
    head = textwrap.dedent("""
        workflow:
          - step: s
            loop: {in: [1]}
            tool:
              - name: a
                kind: noop
              - name: b
                kind: noop
                spec:
                  policy:
                    rules:
        """)
    rules = textwrap.indent(textwrap.dedent(rules_yaml).strip("\n"), " " * 14)
    return load(head + rules + "\n").playbook.workflow[0].tool[1].spec.policy.rules


RULES = [
    pytest.param("""
      - when: "{{ output.status == 'error' }}"
        then: {do: fail}
      - else:
          then: {do: continue}
    """, [("{{ output.status == 'error' }}", "fail"), (None, "continue")], id="when-then-and-else-then"),
    pytest.param("""
      - else:
          do: continue
          set: {ctx.x: 1}
    """, [(None, "continue")], id="else-with-action-directly"),
    pytest.param("""
      - else:
        then:
          do: break
    """, [(None, "break")], id="empty-else-with-sibling-then"),
    pytest.param("""
      - then: {do: fail}
    """, [(None, "fail")], id="then-without-when-is-fallback"),
    pytest.param("""
      - when: true
        then: {do: jump, to: previous}
    """, [("{{ true }}", "jump")], id="boolean-guard"),
]


@pytest.mark.parametrize("rules_yaml,expected", RULES)
def test_policy_rule_shapes(rules_yaml, expected):
    assert [(r.when, r.then.do) for r in _rules(rules_yaml)] == expected


def test_else_action_set_is_split():
    rule = _rules("""
      - else:
          do: continue
          set: {ctx.x: 1, iter.y: 2, z: 3}
    """)[0]
    assert (rule.then.set_ctx, rule.then.set_iter, rule.then.set_vars) == ({"x": 1}, {"y": 2}, {"z": 3})


def test_backoff_fixed_is_none_and_retry_defaults_to_three_attempts():
    rules = _rules("""
      - when: "{{ output.status == 'error' }}"
        then: {do: retry, backoff: fixed, delay: 2}
      - when: "{{ output.status == 'skip' }}"
        then: {do: retry, attempts: 5, backoff: constant}
    """)
    assert (rules[0].then.backoff, rules[0].then.attempts, rules[0].then.delay) == ("none", 3, 2.0)
    assert (rules[1].then.backoff, rules[1].then.attempts) == ("none", 5)


# ---------------------------------------------------------------- admission

def test_admission_rules_normalize_to_when_allow():
    admit = load("""
        workflow:
          - step: s
            spec:
              policy:
                admit:
                  mode: exclusive
                  rules:
                    - when: "{{ workload.enabled }}"
                      then: {allow: true}
                    - else:
                        then: {allow: false}
            tool: {kind: noop}
        """).playbook.workflow[0].spec.policy.admit
    assert [(r.when, r.allow) for r in admit.rules] == [("{{ workload.enabled }}", True), (None, False)]


def test_admission_canonical_form_is_accepted():
    admit = load("""
        workflow:
          - step: s
            spec: {policy: {admit: {rules: [{when: "{{ ctx.ok }}", allow: true}, {else: {allow: false}}]}}}
            tool: {kind: noop}
        """).playbook.workflow[0].spec.policy.admit
    assert [(r.when, r.allow) for r in admit.rules] == [("{{ ctx.ok }}", True), (None, False)]


# ---------------------------------------------------------------- loops and routers

def test_loop_forms():
    pb = load("""
        workflow:
          - step: a
            loop: {in: "{{ workload.items }}", iterator: it, mode: parallel, max_in_flight: 4}
            tool: {kind: noop}
          - step: b
            loop:
              in: [1, 2]
              spec: {mode: parallel, max_in_flight: 8}
            tool: {kind: noop}
        """).playbook
    a, b = pb.workflow[0].loop, pb.workflow[1].loop
    assert (a.in_, a.iterator, a.spec.mode, a.spec.max_in_flight) == ("{{ workload.items }}", "it", "parallel", 4)
    assert (b.in_, b.iterator, b.spec.mode, b.spec.max_in_flight) == ([1, 2], "item", "parallel", 8)


def test_router_defaults_and_on_no_match_extension():
    pb = load("""
        workflow:
          - step: a
            tool: {kind: noop}
            next:
              spec: {on_no_match: quiet}
              arcs:
                - step: b
                  when: "{{ ctx.go }}"
          - step: b
            tool: {kind: noop}
            next: {arcs: [{step: c}]}
          - step: c
            tool: {kind: noop}
            next:
        """).playbook
    assert pb.workflow[0].next.spec.on_no_match == "quiet"
    assert pb.workflow[1].next.spec.mode == "exclusive"
    assert pb.workflow[2].next is None


# ---------------------------------------------------------------- templates

@pytest.mark.parametrize("value,expected", [
    ("{{ iter._index }}", "{{ iter.index }}"),
    ("row {{ iter._index + 1 }} of {{ n }}", "row {{ iter.index + 1 }} of {{ n }}"),
    ("{% if iter._index > 0 %}x{% endif %}", "{% if iter.index > 0 %}x{% endif %}"),
    ("iter._index outside a template stays", "iter._index outside a template stays"),
    ({"a": ["{{ iter._index }}"]}, {"a": ["{{ iter.index }}"]}),
    ("{{ my_iter._index }}", "{{ my_iter._index }}"),
])
def test_iter_index_alias(value, expected):
    assert rewrite_templates(value) == expected


def test_iter_index_rewritten_in_loaded_playbook():
    task = load("""
        workflow:
          - step: s
            loop: {in: [1]}
            tool: {kind: python, input: {i: "{{ iter._index }}"}, code: pass}
        """).playbook.workflow[0].tool[0]
    assert task.config["input"] == {"i": "{{ iter.index }}"}


def test_yaml_dates_stay_strings():
    from noetl_temporal.dsl import load_playbook_text
    pb = load_playbook_text(textwrap.dedent("""
        metadata: {name: t, version: 2024-01-01}
        workload: {day: 2024-02-03}
        workflow:
          - step: s
            tool: {kind: noop}
        """)).playbook
    assert pb.metadata.version == "2024-01-01"
    assert pb.workload == {"day": "2024-02-03"}


def test_loaded_playbook_exposes_raw_positions_and_source():
    loaded = load("""
        workflow:
          - step: s
            tool: {kind: noop}
        """)
    assert loaded.source == "pb.yaml"
    assert loaded.raw["workflow"][0]["step"] == "s"
    assert loaded.positions["workflow"] == (5, 1)
    assert loaded.positions["workflow[0]"] == (6, 5)
    assert loaded.positions["workflow[0].tool.kind"] == (7, 12)
    assert loaded.warnings == []
