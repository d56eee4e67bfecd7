"""Each tool kind's declaration (tool_kinds/<kind>.py) checked by ``validate``: every
mistake with its exact located message (file:line:col, code, JSON path, fix)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text

HEAD = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\n"

CASES = [
    pytest.param(
        'workflow:\n  - step: s\n    tool: {kind: python, input: {a: 1}}\n',
        ["pb.yaml:6:5: NTL309 python task 's_task' has no `code` or `code_b64` or `code_base64` (workflow[0].tool) — fix: add `code:` to the task (Python that sets `result` or defines `main(...)`)"],
        id='python-without-code'),
    pytest.param(
        'workflow:\n  - step: s\n    tool:\n      kind: http\n      method: POST\n',
        ["pb.yaml:6:5: NTL309 http task 's_task' has no `url` or `endpoint` (workflow[0].tool) — fix: add `url:` to the task (query parameters already in the url are kept)"],
        id='http-without-url'),
    pytest.param(
        "workflow:\n  - step: s\n    spec: {http: {url: 'http://x'}}\n    tool: {kind: http}\n",
        [],
        id='http-url-from-a-step-default'),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: http, url: 'http://x', metod: POST}\n",
        ["pb.yaml:6:41: NTL310 http tasks have no setting `metod` (did you mean 'method'?); known: url, endpoint, method, params, headers, json, payload, body, data, timeout, verify, verify_ssl, follow_redirects, input, args (workflow[0].tool.metod) — fix: correct the spelling or remove the key; docs/tools.md lists each kind's settings"],
        id='misspelt-key'),
    pytest.param(
        'workflow:\n  - step: s\n    tool: {kind: noop, x: 1}\n',
        ["pb.yaml:6:24: NTL310 noop tasks have no setting `x`; known: result, input, args (workflow[0].tool.x) — fix: correct the spelling or remove the key; docs/tools.md lists each kind's settings"],
        id='unknown-key'),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: http, url: 'http://x', headers: [a, b]}\n",
        ['pb.yaml:6:50: NTL311 `headers` (http) must be mapping, not list (workflow[0].tool.headers) — fix: give the type docs/tools.md lists for the setting, or a `{{ }}` template that renders to it'],
        id='wrong-type'),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: http, url: 'http://x', headers: '{{ workload.h }}'}\n",
        [],
        id='template-stands-for-a-mapping'),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: result, ref: 1, select: {n: '{{ x }}'}}\n",
        ['pb.yaml:6:42: NTL311 `select` (result) is read as written (the tool evaluates it), but it holds a {{ }} template the workflow would render first (workflow[0].tool.select) — fix: write the expressions of `select` without {{ }}'],
        id='select-with-braces'),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: python, code: 'result = 1', assert: {expects: [a]}}\n",
        ["pb.yaml:6:46: NTL312 `assert` on a python task is ignored: NoETL's `expects`/`returns` contract is not checked by noetl-temporal (check the result in a task policy or a later task) (workflow[0].tool.assert) — fix: remove the key: it has no effect here (docs/tools.md says why)"],
        id='noetl-key-ignored'),
    pytest.param(
        'workflow:\n  - step: s\n    tool:\n      - name: run\n        kind: shell\n        env: {A: b}\n',
        ["pb.yaml:7:9: NTL309 shell task 'run' has no `cmd` or `cmds` or `command` (workflow[0].tool[0]) — fix: add `cmd:` to the task (a command, or a list run in order; the first failure stops)"],
        id='shell-without-command'),
    pytest.param(
        'workbook:\n  - name: w\n    tool: {kind: python}\nworkflow:\n  - step: s\n    tool: {kind: workbook, name: w}\n',
        ["pb.yaml:9:5: NTL309 python task 'w' has no `code` or `code_b64` or `code_base64` (workflow[0].tool) — fix: add `code:` to the task (Python that sets `result` or defines `main(...)`)"],
        id='workbook-entry-without-code'),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_tool_settings_are_checked_against_the_kind(text, expected):
    assert [str(d) for d in validate_text(HEAD + text, "pb.yaml")] == expected
