"""NoETL's `script:` at validation: file and http sources are taken (the activity loads
them, tests/tools/test_tool_scripts.py), object stores refused by name (NTL325)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text


def playbook(kind: str, script: str) -> str:
    return f"workflow:\n  - step: a\n    tool:\n      kind: {kind}\n      script: {script}\n"


@pytest.mark.parametrize("kind", ["python", "postgres"])
@pytest.mark.parametrize("script", ["{uri: ./x, source: {type: file}}",
                                    "{uri: x.py, source: {type: http, endpoint: 'http://h/x.py'}}",
                                    "{uri: 'https://h/x.py'}",
                                    "{uri: '{{ workload.p }}', source: {type: '{{ workload.t }}'}}",
                                    "{uri: inline, source: {type: inline, code: 'result = 1'}}"])
def test_file_and_http_scripts_stand_for_the_inline_text(kind, script):
    errors = [d for d in validate_text(playbook(kind, script), "s.yaml") if d.is_error]
    assert errors == []


@pytest.mark.parametrize("script", ["{uri: 'gs://b/x.py', source: {type: gcs}}", "{uri: 'gs://b/x.py'}"])
def test_gcs_scripts_are_refused_naming_what_is_missing(script):
    [error] = [d for d in validate_text(playbook("python", script), "s.yaml") if d.is_error]
    assert (error.code, error.line) == ("NTL325", 5)
    assert "'gcs', which needs a Google Cloud Storage client" in error.message
    assert "source: {type: file}" in error.fix


def test_s3_scripts_are_taken_and_noetls_credential_name_is_warned_about():
    ok = "{uri: 's3://b/x.sql', source: {type: s3, region: us-east-1}}"
    assert [d for d in validate_text(playbook("postgres", ok), "s.yaml") if d.is_error] == []
    named = "{uri: 's3://b/x.sql', source: {type: s3, auth: aws_credentials}}"
    [warning] = validate_text(playbook("postgres", named), "s.yaml")
    assert (warning.code, warning.severity, warning.line) == ("NTL326", "warning", 5)
    assert "keychain" in warning.fix


def test_without_code_or_script_the_task_is_refused():
    text = "workflow:\n  - step: a\n    tool: {kind: python}\n"
    [error] = [d for d in validate_text(text, "s.yaml") if d.is_error]
    assert error.code == "NTL309" and "script" in error.message
