"""Issue 37 item 3: every key of a step's `spec.policy` is honoured or refused, and every
NTL901 names the shape the key takes (derived from the models, ``dsl/model_shapes.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from noetl_temporal.dsl import load_playbook_text

from .helpers import errors, find, playbook, warnings

REPO = Path(__file__).resolve().parents[2]


def _validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "validate", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def _step_policy(policy: str) -> str:
    return playbook(f"""
        workflow:
          - step: start
            spec:
              policy:
        {policy}
            tool: {{kind: noop}}
        """)


@pytest.mark.parametrize("policy, key, fix", [
    ("        bogus_key: 1", "bogus_key", "`policy` takes `admit`, `failure`, `lifecycle`"),
    ("        lifecycle: {timeout_s: 1, bogus: 2}", "bogus", "`lifecycle` takes `timeout_s`"),
    ("        failure: {mode: fail_fast, retries: 2}", "retries", "`failure` takes `mode`"),
])
def test_validate_refuses_an_unknown_step_policy_key_at_its_line(tmp_path, policy, key, fix):
    text = _step_policy(policy)
    path = tmp_path / "pb.yaml"
    path.write_text(text)
    proc = _validate(path)
    line, col = find(text, key)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert f"pb.yaml:{line}:{col}: NTL902 unknown key '{key}'" in out
    assert fix in out and "Traceback" not in out


def test_validate_refuses_task_actions_in_a_step_policy(tmp_path):
    text = _step_policy('        rules: [{when: "{{ true }}", then: {do: retry}}]')
    path = tmp_path / "pb.yaml"
    path.write_text(text)
    proc = _validate(path)
    line, col = find(text, "rules")
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert f"pb.yaml:{line}:{col}: NTL410" in out
    assert "spec: {policy: {rules: [...]}}" in out  # the fix says where task actions go


def test_step_policy_lifecycle_becomes_the_step_lifecycle_the_engine_reads():
    pb = load_playbook_text(_step_policy("        lifecycle: {timeout_s: 1}"))
    step = pb.playbook.workflow[0]
    assert step.spec.lifecycle is not None and step.spec.lifecycle.timeout_s == 1
    assert step.spec.policy is not None and step.spec.policy.lifecycle is None


def test_step_policy_lifecycle_beside_spec_lifecycle_warns_and_spec_lifecycle_wins():
    text = playbook("""
        workflow:
          - step: start
            spec:
              lifecycle: {timeout_s: 5}
              policy: {lifecycle: {timeout_s: 1}}
            tool: {kind: noop}
        """)
    (warn,) = [w for w in warnings(text) if w.code == "NTL308"]
    assert warn.path == "workflow[0].spec.policy.lifecycle"
    assert load_playbook_text(text).playbook.workflow[0].spec.lifecycle.timeout_s == 5


def test_a_wrong_value_under_a_moved_lifecycle_points_at_the_source():
    text = _step_policy("        lifecycle: {timeout_s: soon}")
    (err,) = errors(text)
    assert err.code == "NTL901" and (err.line, err.col) == find(text, "soon")
    assert err.fix == "`timeout_s` takes a number > 0 and <= 315360000"


# --------------------------------------------------------------------------- NTL901 fixes

SHAPES = [
    # a task policy written as a list: the case
    ("""
     workflow:
       - step: a
         tool:
           kind: noop
           spec:
             policy:
               - when: "{{ true }}"
                 then: {do: retry}
     """, "`policy` takes a mapping: write `policy: {rules: [...], on_unmatched: ...}`"),
    ("""
     workflow:
       - step: a
         spec: {policy: [1]}
         tool: {kind: noop}
     """, "`policy` takes a mapping: write `policy: {admit: {...}, failure: {...}, lifecycle: {...}}`"),
    ("""
     workflow:
       - step: a
         tool:
           kind: noop
           spec: {policy: {rules: [{when: "{{ true }}", then: {do: retyr}}]}}
     """, "`do` takes one of `continue`, `retry`, `jump`, `break`, `fail`"),
    ("""
     workflow:
       - step: a
         tool:
           kind: noop
           spec: {policy: {rules: [{else: {then: {do: retry, attempts: 0}}}]}}
     """, "`attempts` takes an integer >= 1 and <= 1000000, or a {{ }} template that renders one"),
    ("""
     workflow:
       - step: a
         loop: {in: [1], iterator: x, spec: {mode: paralel}}
         tool: {kind: noop}
     """, "`mode` takes one of `sequential`, `parallel`, `cursor`"),
    ("""
     executor: {spec: {no_next_is_error: maybe}}
     workflow:
       - step: a
         tool: {kind: noop}
     """, "`no_next_is_error` takes `true` or `false`"),
    ("""
     workflow:
       - step: a
         tool: {kind: noop, spec: {result: 3}}
     """, "`result` takes a mapping: write `result: {inline_max_bytes: ..., store: ..., select: {...}, "
          "preview: ..., preview_max_bytes: ..., keep: [...]}`"),
    ("""
     workflow:
       - step: a
         spec: {failure: fail_fast}
         tool: {kind: noop}
     """, "`failure` takes a mapping: write `failure: {mode: ...}`"),
    ("""
     workflow:
       - step: a
         tool: {kind: noop}
         next: {spec: {mode: exclusive}, arcs: [{step: a, when: [1]}]}
     """, "`when` takes a string"),
]


@pytest.mark.parametrize("body, fix", SHAPES)
def test_every_ntl901_names_the_shape_its_key_takes(body, fix):
    (err,) = errors(playbook(body))
    assert err.code == "NTL901"
    assert err.fix == fix
    assert "use a value the message allows" not in str(err)
    assert "instance of" not in err.message  # no class names of ours in a user's message


def test_a_step_set_key_naming_no_variable_says_how_to_write_one():
    (err,) = errors(playbook("""
        workflow:
          - step: a
            tool: {kind: noop}
            set: {"ctx.": 1}
        """))
    assert err.code == "NTL901" and "`set: {ctx.<name>: ..., iter.<name>: ...}`" in err.fix


# --------------------------------------------------------------------------- http timeout phases

def _http(spec_timeout: str, kind: str = "http") -> str:
    settings = "url: http://127.0.0.1:9/" if kind == "http" else "code: \"def main(): return 1\""
    return playbook(f"""
        workflow:
          - step: a
            tool:
              kind: {kind}
              {settings}
              spec:
                timeout: {spec_timeout}
        """)


def test_validate_accepts_noetls_http_timeout_shape_and_moves_it_to_the_tool(tmp_path):
    text = _http("{connect: 5, read: 15}")
    path = tmp_path / "pb.yaml"
    path.write_text(text)
    proc = _validate(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr   # was NTL901 "Input should be a valid number"
    task = load_playbook_text(text).playbook.workflow[0].tool[0]
    assert task.config["timeout"] == {"connect": 5, "read": 15}
    assert task.spec.timeout is None  # the attempt keeps the activity's limit


@pytest.mark.parametrize("value, code, needle", [
    ("{connect: 5, reed: 15}", "NTL310", "reed"),
    ("{connect: 0, read: 15}", "NTL311", "0, read"),
])
def test_a_wrong_http_timeout_phase_is_located(value, code, needle):
    text = _http(value)
    (err,) = errors(text)
    assert err.code == code and (err.line, err.col) == find(text, needle)
    assert err.fix == "write `timeout: {connect: <seconds>, read: <seconds>}`"


def test_phase_timeouts_are_http_only():
    (err,) = errors(_http("{connect: 5, read: 15}", kind="python"))
    assert err.code == "NTL901" and err.fix == "`timeout` takes a number > 0 and <= 315360000"


# --------------------------------------------------------------------------- spec layers

@pytest.mark.parametrize("layer, key", [
    ("executor: {spec: {bogus_es: 1}}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n", "bogus_es"),
    ("workflow:\n  - step: a\n    spec: {bogus_ss: 1}\n    tool: {kind: noop}\n", "bogus_ss"),
    ("workflow:\n  - step: a\n    loop: {in: [1], iterator: x, spec: {bogus_ls: 1}}\n    tool: {kind: noop}\n",
     "bogus_ls"),
    ("workflow:\n  - step: a\n    tool: {kind: noop, spec: {bogus_ts: 1}}\n", "bogus_ts"),
])
def test_an_unknown_key_in_any_spec_layer_is_refused_where_it_is(layer, key):
    text = playbook(layer)
    (err,) = errors(text)
    assert err.code == "NTL902" and (err.line, err.col) == find(text, key)
    assert "`<kind>: {...}` tool defaults" in err.fix


def test_a_tool_setting_under_a_tasks_spec_is_refused_with_the_move():
    text = playbook("workflow:\n  - step: a\n    tool: {kind: http, url: http://x/, spec: {method: POST}}\n")
    (err,) = errors(text)
    assert err.code == "NTL315" and (err.line, err.col) == find(text, "method")
    assert "move the key out of `spec:`" in err.fix


def test_tool_defaults_in_a_spec_layer_are_checked_against_the_kind():
    text = playbook("workflow:\n  - step: a\n    spec: {http: {timeout: 3, bogsu: 1}}\n"
                    "    tool: {kind: http, url: http://x/}\n")
    (err,) = errors(text)
    assert err.code == "NTL310" and (err.line, err.col) == find(text, "bogsu")


def test_noetls_loop_placement_policy_is_accepted_and_documented_as_ignored():
    text = playbook("workflow:\n  - step: a\n    loop: {in: [1], iterator: x, spec: {policy: {exec: distributed}}}\n"
                    "    tool: {kind: noop}\n")
    assert errors(text) == []
    page = (REPO / "docs" / "dialect-aliases.md").read_text(encoding="utf-8")
    assert "`LoopSpec.policy`" in page.split("## Accepted and ignored", 1)[1]


@pytest.mark.parametrize("body, key", [
    ("executor: {profile: local, bogus_exec: 1}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n", "bogus_exec"),
    ("workflow:\n  - step: a\n    tool: {kind: noop, spec: {result: {store: auto, bogus_rs: 1}}}\n", "bogus_rs"),
])
def test_executor_and_result_spec_are_closed(body, key):
    text = playbook(body)
    (err,) = errors(text)
    assert err.code == "NTL902" and (err.line, err.col) == find(text, key)
