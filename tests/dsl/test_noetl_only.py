"""NoETL constructs this project does not run are refused by name, located, with a fix."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl.noetl_only import NOETL_TOOL_KINDS, SERVICE_KIND_CODES

from .helpers import codes, errors, find, playbook, warnings

# The tool kinds NoETL's fixture set uses that have no tool here (docs/noetl-e2e-fates.md).
E2E_KINDS = ["snowflake", "ducklake", "container", "script", "agent"]


@pytest.mark.parametrize("kind", E2E_KINDS)
def test_a_noetl_tool_kind_is_named_as_such(kind):
    text = playbook(f"workflow:\n  - step: a\n    tool: {{kind: {kind}, auth: x}}\n")
    (diag,) = errors(text)
    assert diag.code == SERVICE_KIND_CODES.get(kind, "NTL320")
    assert diag.message.startswith(f"kind {kind!r} is a NoETL tool that noetl-temporal does not run: ")
    assert "unknown" not in diag.message
    assert (diag.line, diag.col, diag.path) == (*find(text, kind), "workflow[0].tool.kind")
    assert diag.fix == NOETL_TOOL_KINDS[kind][1]


@pytest.mark.parametrize("kind,instead", [("ducklake", "kind: duckdb"), ("script", "`python` task"),
                                          ("snowflake", "`python` task")])
def test_the_fix_names_what_to_use_instead(kind, instead):
    (diag,) = errors(playbook(f"workflow:\n  - step: a\n    tool:\n      - name: t\n        kind: {kind}\n"))
    assert (diag.code, diag.path) == (SERVICE_KIND_CODES.get(kind, "NTL320"), "workflow[0].tool[0].kind")
    assert instead in diag.fix


@pytest.mark.parametrize("kind,code,service", [("snowflake", "NTL336", "Snowflake"),
                                               ("ducklake", "NTL337", "lake service"),
                                               ("container", "NTL338", "Kubernetes")])
def test_a_kind_needing_a_missing_service_has_its_own_code_naming_it(kind, code, service):
    (diag,) = errors(playbook(f"workflow:\n  - step: a\n    tool: {{kind: {kind}}}\n"))
    assert diag.code == code and service in diag.message


def test_a_typo_is_still_an_unknown_kind():
    assert codes(errors(playbook("workflow:\n  - step: a\n    tool: {kind: snowflak}\n"))) == ["NTL302"]


def test_root_tracing_is_a_noetl_setting():
    text = playbook("tracing: {enabled: true}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n")
    (diag,) = errors(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == ("NTL101", "tracing", find(text, "tracing"))
    assert "NoETL" in diag.message and "--tracing" in diag.fix


def test_step_output_is_read_not_refused():
    """NoETL's step `output:` is the step's result block (dsl/tasks.py `step_output`)."""
    text = playbook("workflow:\n  - step: a\n    tool: {kind: noop}\n    output: {output_select: [x]}\n")
    assert errors(text) == []


@pytest.mark.parametrize("where", ["loop.spec", "loop"])
def test_a_templated_max_in_flight_validates_and_text_that_is_no_template_is_located(where):
    # NoETL 5.x templates it; the number is checked once rendered (tests/engine/test_templated_numbers.py)
    def text(value: str) -> str:
        limit = f"max_in_flight: {value}"
        body = (f"      spec: {{mode: parallel, {limit}}}\n" if where == "loop.spec"
                else f"      {limit}\n      spec: {{mode: parallel}}\n")
        return playbook("workflow:\n  - step: a\n    loop:\n      in: '{{ [1, 2] }}'\n      iterator: x\n" + body
                        + "    tool: {kind: noop}\n")
    assert errors(text("'{{ n | int }}'")) == []
    (diag,) = errors(text("'eight'"))
    assert diag.code == "NTL901"
    assert (diag.path, (diag.line, diag.col)) == (f"workflow[0].{where}.max_in_flight", find(text("'eight'"), "'eight"))


@pytest.mark.parametrize("key, value", [("attempts", "'{{ workload.tries }}'"), ("delay", "'{{ 0.5 * 2 }}'"),
                                        ("max_delay", "'{{ cap }}'")])
def test_templated_retry_numbers_validate(key, value):
    text = playbook("workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec: {policy: {rules: "
                    f"[{{else: {{then: {{do: retry, {key}: {value}}}}}}}]}}}}\n")
    assert [d.code for d in errors(text)] == []


def test_go_template_quoting_passes_and_a_broken_one_gets_a_jinja_fix_that_validates():
    # NoETL 5.3.2 passes {{`...`}} through unchanged, and so does the file reader here
    cmd = "docker system df --format '{{`{{json .}}`}}'"
    assert errors(playbook(f'workflow:\n  - step: a\n    tool: {{kind: shell, cmds: ["{cmd}"]}}\n')) == []
    cmd = "docker system df --format '{{`{{json .}}'"      # the closing `}} is missing
    (diag,) = errors(playbook(f'workflow:\n  - step: a\n    tool: {{kind: shell, cmds: ["{cmd}"]}}\n'))
    assert diag.code == "NTL701" and "Go-template quoting" in diag.fix
    fixed = "docker system df --format {{ '{{json .}}' }}"
    assert errors(playbook(f'workflow:\n  - step: a\n    tool: {{kind: shell, cmds: ["{fixed}"]}}\n')) == []


@pytest.mark.parametrize("hook, fix", [("before", "before this one"), ("after", "`_prev`"),
                                       ("finally", "both outcomes")])
def test_a_task_policy_hook_is_one_located_error_naming_the_pipeline_form(hook, fix):
    text = playbook("workflow:\n  - step: a\n    tool:\n      kind: noop\n      spec:\n        policy:\n"
                    f"          {hook}: {{kind: noop}}\n          on_unmatched: continue\n")
    (diag,) = errors(text)
    assert (diag.code, diag.path, (diag.line, diag.col)) == ("NTL409", f"workflow[0].tool.spec.policy.{hook}",
                                                            find(text, f"{hook}:"))
    assert "NoETL 5.x hook" in diag.message and fix in diag.fix


@pytest.mark.parametrize("kind", ["tool: {kind: postgres, auth: pg, command: SELECT 1}",
                                  "tool: {kind: http, url: \"http://x\"}"])
def test_noetl_s_step_envelope_data_validates_without_a_warning(kind):
    # the engine reads `.data` as NoETL does (engine/envelope_data.py): NTL339 is retired
    text = playbook(f"workflow:\n  - step: load\n    {kind}\n"
                    "    next: {spec: {mode: exclusive}, arcs: [{step: use}]}\n"
                    "  - step: use\n    tool:\n      kind: python\n"
                    "      input: {rows: \"{{ load.data.command_0.rows }}\"}\n      code: \"result = rows\"\n")
    assert not errors(text) and not warnings(text)


def test_a_transfer_endpoint_is_checked_at_validation():
    text = playbook("workflow:\n  - step: a\n    tool:\n      kind: transfer\n"
                    "      source: {type: snowflake, query: SELECT 1}\n      target: {type: oracle, table: t}\n")
    sf, other = errors(text)
    assert (sf.code, sf.path, (sf.line, sf.col)) == ("NTL336", "workflow[0].tool.source.type", find(text, "snowflake"))
    assert "Snowflake account" in sf.message
    assert (other.code, other.path) == ("NTL316", "workflow[0].tool.target.type")
    assert "postgres, duckdb, file" in other.fix
