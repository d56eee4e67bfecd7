"""Mistakes ``validate`` catches before anything runs, each with its exact located message
(file:line:col, code, message, JSON path, fix): a table, one row per mistake."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text

HEAD = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\n"

# Each tool kind's declaration (tool_kinds/<kind>.py): NTL309-NTL312.
TOOL_SETTINGS = [
    pytest.param(
        'workflow:\n  - step: s\n    tool: {kind: python, input: {a: 1}}\n',
        ["pb.yaml:6:5: NTL309 python task 's_task' has no `code` or `code_b64` or `code_base64` or `script` (workflow[0].tool) — fix: add `code:` to the task (Python that sets `result` or defines `main(...)`)"],
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
        ["pb.yaml:6:41: NTL310 http tasks have no setting `metod` (did you mean 'method'?); known: url, endpoint, method, params, headers, json, payload, form, body, data, timeout, verify, verify_ssl, follow_redirects, input, args (workflow[0].tool.metod) — fix: correct the spelling or remove the key; docs/tools.md lists each kind's settings"],
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
        ['pb.yaml:6:42: NTL311 `select` (result) is read as written (the tool evaluates it), but it holds a {{ }} template the workflow would render first (workflow[0].tool.select) — fix: write the expressions of `select` without {{ }}',
         # a setting's error no longer hides the later checks
         "pb.yaml:6:46: NTL702 `x` in '{{ x }}' names nothing this playbook defines; it renders empty unless the run's payload supplies it (workflow[0].tool.select.n) — fix: correct the name (a step, task, workload key, arc arg, loop iterator or `set:` name), or write `| default(...)` if the run's payload supplies it"],
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
        ["pb.yaml:9:5: NTL309 python task 'w' has no `code` or `code_b64` or `code_base64` or `script` (workflow[0].tool) — fix: add `code:` to the task (Python that sets `result` or defines `main(...)`)"],
        id='workbook-entry-without-code'),
]

TOOL_SETTINGS.append(pytest.param(
    "workbook:\n  - name: w\n    tool: {kind: python, code: x, cod_b64: y}\nworkflow:\n  - step: s\n"
    "    tool: {kind: workbook, name: w}\n",
    ["pb.yaml:6:35: NTL310 python tasks have no setting `cod_b64` (did you mean 'code_b64'?); known: code, "
     "code_b64, code_base64, script, libs, env, timeout, in_worker, input, args (workbook[0].tool.cod_b64) — fix: "
     "correct the spelling or remove the key; docs/tools.md lists each kind's settings"],
    id="misspelt-key-in-a-workbook-entry-is-located-there"))

TOOL_SETTINGS += [
    pytest.param(
        "workflow:\n  - step: s\n    tool:\n      kind: http\n      spec: {url: 'http://x'}\n",
        ["pb.yaml:6:5: NTL309 http task 's_task' has no `url` or `endpoint` (workflow[0].tool) — fix: move "
         "`url:` out of the task's `spec:` to beside `kind:` (`spec:` holds policy, timeout, result and "
         "`spec.<kind>:` defaults)"],
        id="setting-nested-under-spec"),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: http, url: 'http://x', auth: api}\n",
        ["pb.yaml:6:41: NTL312 `auth` on a http task is ignored: the http tool does not add credentials from "
         "`auth`; send them in `headers:` (`Authorization: \"Bearer {{ keychain.<entry>.token }}\"`) "
         "(workflow[0].tool.auth) — fix: remove the key: it has no effect here (docs/tools.md says why)"],
        id="noetl-http-auth-is-said-to-do-nothing"),
    pytest.param(   # a setting's error does not hide the mistakes the later checks find
        "workflow:\n  - step: s\n    tool: {kind: http, url: 'http://x', metod: POST}\n"
        "    next: {arcs: [{step: t}]}\n  - step: t\n    tool: {kind: python}\n",
        ["pb.yaml:6:41: NTL310 http tasks have no setting `metod` (did you mean 'method'?); known: url, endpoint, "
         "method, params, headers, json, payload, form, body, data, timeout, verify, verify_ssl, follow_redirects, input, "
         "args (workflow[0].tool.metod) — fix: correct the spelling or remove the key; docs/tools.md lists each "
         "kind's settings",
         "pb.yaml:9:5: NTL309 python task 't_task' has no `code` or `code_b64` or `code_base64` or `script` (workflow[1].tool) "
         "— fix: add `code:` to the task (Python that sets `result` or defines `main(...)`)"],
        id="an-unknown-key-and-a-missing-setting-in-one-run"),
]

# Template names that can never resolve (NTL702, NTL703) and a loop without `iterator` (NTL604).
TEMPLATE_NAMES = [
    pytest.param(
        "workload: {start: {x: 1}}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n"
        "    next: {arcs: [{step: report}]}\n  - step: report\n    tool: {kind: noop, result: '{{ start.x }}'}\n",
        [],
        id='step-name-also-a-workload-key-is-not-certain'),
    pytest.param(
        "workflow:\n  - step: s\n    tool: {kind: noop, result: '{{ nosuchvar }}'}\n",
        ["pb.yaml:6:32: NTL702 `nosuchvar` in '{{ nosuchvar }}' names nothing this playbook defines; it renders empty unless the run's payload supplies it (workflow[0].tool.result) — fix: correct the name (a step, task, workload key, arc arg, loop iterator or `set:` name), or write `| default(...)` if the run's payload supplies it"],
        id='name-nothing-defines'),
    pytest.param(
        "workflow:\n  - step: compute\n    tool: {kind: python, code: x}\n    next: {arcs: [{step: report}]}\n  - step: report\n    tool: {kind: noop, result: '{{ compte.total }}'}\n",
        ["pb.yaml:9:32: NTL702 `compte` in '{{ compte.total }}' names nothing this playbook defines (did you mean 'compute'?); it renders empty unless the run's payload supplies it (workflow[1].tool.result) — fix: correct the name (a step, task, workload key, arc arg, loop iterator or `set:` name), or write `| default(...)` if the run's payload supplies it"],
        id='misspelt-step-name'),
    pytest.param(
        "workload: {cities: [a]}\nworkflow:\n  - step: s\n    loop: {in: '{{ citys }}', iterator: city}\n    tool: {kind: noop, result: '{{ city }}'}\n",
        ["pb.yaml:7:16: NTL702 `citys` in '{{ citys }}' names nothing this playbook defines (did you mean 'city'?); it renders empty unless the run's payload supplies it (workflow[0].loop.in) — fix: correct the name (a step, task, workload key, arc arg, loop iterator or `set:` name), or write `| default(...)` if the run's payload supplies it"],
        id='misspelt-workload-key'),
    pytest.param(
        "workflow:\n  - step: start\n    tool: {kind: noop, result: {total: 1}}\n    next: {arcs: [{step: report}]}\n  - step: report\n    tool: {kind: noop, result: '{{ start.totl }}'}\n",
        ["pb.yaml:9:32: NTL703 `start.totl` in '{{ start.totl }}': step 'start' is a noop whose result has only `total` (did you mean 'total'?) (workflow[1].tool.result) — fix: read a field the result has (the warning lists them), or give the noop the field"],
        id='field-a-noop-result-lacks'),
    pytest.param(
        "workflow:\n  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: report}]}\n  - step: report\n    tool: {kind: shell, cmd: 'echo {{ start.x }}'}\n",
        ["pb.yaml:9:30: NTL703 `start.x` in 'echo {{ start.x }}': step 'start' is a noop whose result is null (workflow[1].tool.cmd) — fix: read a field the result has (the warning lists them), or give the noop the field"],
        id='field-of-a-noop-without-result'),
    pytest.param(
        'workflow:\n  - step: start\n    tool: {kind: noop}\n    next: {arcs: [{step: report}]}\n  - step: report\n    tool: {kind: shell, cmd: "echo {{ start.x | default(1) }} {{ token if token is defined else \'\' }} {{ ctx.a }}"}\n',
        [],
        id='guarded-reads-are-deliberate'),
    pytest.param(
        'workload: {base: x}\nworkflow:\n  - step: start\n    tool: {kind: noop, result: {total: 1}}\n    next: {arcs: [{step: each, args: {limit: 2}}]}\n  - step: each\n    loop: {in: \'{{ [1, 2] }}\', iterator: n}\n    tool:\n      - name: first\n        kind: noop\n        set: {doubled: \'{{ n * 2 }}\'}\n      - name: second\n        kind: noop\n        result: "{{ base }} {{ limit }} {{ start.total }} {{ first }} {{ doubled }} {{ iter.n }} {{ execution_id }} {{ now() }} {% for i in range(2) %}{{ i }}{% endfor %}"\n',
        [],
        id='names-the-playbook-defines'),
    pytest.param(
        "workflow:\n  - step: s\n    loop: {in: [1, 2]}\n    tool: {kind: noop, result: '{{ item }}'}\n",
        ["pb.yaml:6:5: NTL604 the loop of step 's' has no `iterator`, so its item is named `item` (`{{ item }}`, `{{ iter.item }}`) (workflow[0].loop) — fix: name the item: `loop: {in: ..., iterator: row}`"],
        id='loop-without-iterator'),
]


@pytest.mark.parametrize("text, expected", TOOL_SETTINGS + TEMPLATE_NAMES)
def test_each_mistake_has_its_located_message(text, expected):
    assert [str(d) for d in validate_text(HEAD + text, "pb.yaml")] == expected
