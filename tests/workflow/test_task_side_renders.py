"""Task-side renders with secrets and attempts (docs/durability.md, "Task-side renders"): a
task's template that uses a task-only filter renders in its activity (a small input in the
worker's process, a large one in the render child), with ``keychain`` and ``_attempt`` as the
activity knows them, and what it renders from a secret, or a render error that quotes one, is
masked like every other secret form."""

from __future__ import annotations

import base64
import json
import uuid

import pytest

from tests.support.history import payloads

pytestmark = pytest.mark.temporal


def of(report, event_type):
    return {e["entity_id"]: e["payload"]["outcome"] for e in report.events if e["event_type"] == event_type}


async def test_a_task_only_filter_reads_secrets_and_attempt_in_the_activity(run_yaml, temporal, monkeypatch):
    token = "tok-" + uuid.uuid4().hex
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", token)
    report = await run_yaml("""
    keychain:
      - name: api
        kind: bearer
    workload: {words: "alpha beta gamma"}
    workflow:
      - step: call
        tool:
          - name: wrapped
            kind: python
            env:
              TOKEN: "{{ keychain.api.token | upper | wordwrap(100) }}"
            input:
              lines: "{{ workload.words | wordwrap(10) }}"
              attempt: "{{ _attempt | string | wordwrap(5) }}"
            code: |
              import os
              print("token is", os.environ["TOKEN"])
              result = {"lines": lines.split("\\n"), "attempt": attempt, "token": os.environ["TOKEN"]}
          - name: wrapped_large   # over the in-process gate: the render child
            kind: python
            env:
              TOKEN: "{{ (keychain.api.token ~ ' ' ~ ('x ' * 3000)) | upper | wordwrap(100) }}"
            code: |
              import os
              print("token is", os.environ["TOKEN"])   # what the template rendered, whole
              result = {"value": os.environ["TOKEN"], "lines": os.environ["TOKEN"].count("\\n")}
          - name: quoted
            kind: shell
            cmd: "echo {{ ('{' ~ keychain.api.token ~ '}').format() | wordwrap }}"
            spec:
              policy:
                rules:
                  - when: "{{ output.status == 'error' }}"
                    then: {do: continue}
    """)
    assert report.state == "COMPLETED", report.error
    done, failed = of(report, "task.done"), of(report, "task.failed")
    wrapped = done["wrapped"]
    assert wrapped["result"]["lines"] == ["alpha beta", "gamma"] and wrapped["result"]["attempt"] == "1"
    assert wrapped["result"]["token"] == "***" and "token is ***" in wrapped["py"]["stdout"]
    large = done["wrapped_large"]
    assert large["result"]["lines"] > 50 and large["result"]["value"] == "***", large
    assert "token is ***" in large["py"]["stdout"] and token.upper() not in json.dumps(large)
    quoted = failed["quoted"]["error"]["message"]
    assert quoted.startswith("call.tool.quoted.cmd: KeyError") and "***" in quoted, quoted

    history = (await temporal.client.get_workflow_handle(report.workflow_id).fetch_history()).to_json()
    decoded = [base64.b64decode(p["data"]).decode("utf-8", "replace") for p in payloads(json.loads(history))]
    text = history + "\n".join(decoded) + json.dumps(report.events)
    assert "{{ keychain.api.token | upper | wordwrap(100) }}" in text   # the workflow sent the template
    assert token not in text and token.upper() not in text, "a secret reached Temporal history or the events"
