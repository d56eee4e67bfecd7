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
                                    "{uri: '{{ workload.p }}', source: {type: '{{ workload.t }}'}}"])
def test_file_and_http_scripts_stand_for_the_inline_text(kind, script):
    errors = [d for d in validate_text(playbook(kind, script), "s.yaml") if d.is_error]
    assert errors == []


@pytest.mark.parametrize(("script", "named", "line"), [
    ("{uri: 's3://b/x.sql', source: {type: s3, region: us-east-1}}", "'s3', which needs an S3 client", 5),
    ("{uri: 'gs://b/x.py', source: {type: gcs}}", "'gcs', which needs a Google Cloud Storage client", 5),
    ("{uri: 's3://b/x.sql'}", "'s3'", 5),
])
def test_object_store_scripts_are_refused_naming_what_is_missing(script, named, line):
    [error] = [d for d in validate_text(playbook("python", script), "s.yaml") if d.is_error]
    assert (error.code, error.line) == ("NTL325", line) and named in error.message
    assert "source: {type: file}" in error.fix


def test_without_code_or_script_the_task_is_refused():
    text = "workflow:\n  - step: a\n    tool: {kind: python}\n"
    [error] = [d for d in validate_text(text, "s.yaml") if d.is_error]
    assert error.code == "NTL309" and "script" in error.message
