"""``kind: approve`` as ``validate`` sees it (NTL214-NTL218): the form, its field names, the
timeout's answer and who may answer, each located in the file with its fix."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text

HEAD = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nworkflow:\n  - step: s\n    tool:\n"
GOOD = ("      kind: approve\n      prompt: ship?\n      fields:\n        approved: {type: boolean, required: true}\n"
        "        env: {type: string, choices: [staging, prod]}\n        comment: string\n"
        "      approvers: [ops, alice]\n      timeout: 60\n      on_timeout: answer\n"
        "      default: {approved: false}\n")


def _messages(task: str) -> list[str]:
    return [str(d) for d in validate_text(HEAD + task, "pb.yaml")]


def test_a_whole_approve_task_is_valid():
    assert _messages(GOOD) == []


@pytest.mark.parametrize("task, expected", [
    pytest.param("      kind: approve\n      prompt: p\n      fields: {ok: bool}\n",
                 ["pb.yaml:9:16: NTL214 field 'ok' has type 'bool' (workflow[0].tool.fields.ok) — fix: use one of "
                  "string, boolean, integer, number"], id="unknown-type"),
    pytest.param("      kind: approve\n      prompt: p\n      fields: {env: {type: string, choices: []}}\n",
                 ["pb.yaml:9:16: NTL214 field 'env': `choices` is not a non-empty list of string values "
                  "(workflow[0].tool.fields.env) — fix: write `choices: [...]` with string values"],
                 id="empty-choices"),
    pytest.param("      kind: approve\n      prompt: p\n      fields: {n: {type: integer, max: 3}}\n",
                 ["pb.yaml:9:16: NTL214 field 'n' has no setting 'max' (workflow[0].tool.fields.n) — fix: use only "
                  "type, required, choices, doc"], id="unknown-field-setting"),
    pytest.param("      kind: approve\n      prompt: p\n      fields: {timed_out: boolean}\n",
                 ["pb.yaml:9:16: NTL215 field 'timed_out' cannot be used: the result sets it "
                  "(workflow[0].tool.fields.timed_out) — fix: use a name like `approved` (letters, digits, _), "
                  "not answered_by, answered_at, timed_out"], id="reserved-name"),
    pytest.param("      kind: approve\n      prompt: p\n      timeout: 5\n      on_timeout: answer\n",
                 ["pb.yaml:10:7: NTL216 `on_timeout: answer` has no `default` answer to take "
                  "(workflow[0].tool.on_timeout) — fix: add `default: {...}` with the answer a timeout gives, "
                  "or use `on_timeout: fail`"], id="answer-without-default"),
    pytest.param("      kind: approve\n      prompt: p\n      fields: {approved: {type: boolean, required: true}}\n"
                 "      timeout: 5\n      on_timeout: answer\n      default: {comment: late}\n",
                 ["pb.yaml:12:7: NTL216 `default` is not an answer the form accepts: the form has no field "
                  "'comment'; its fields: approved (workflow[0].tool.default) — fix: give `default:` a value for "
                  "each required field, of the field's type"], id="default-does-not-fit"),
    pytest.param("      kind: approve\n      prompt: p\n      on_timeout: fail\n",
                 ["pb.yaml:9:7: NTL217 `on_timeout` has no effect: the task has no `timeout`, so it waits until "
                  "answered (workflow[0].tool.on_timeout) — fix: add `timeout:` (seconds), or drop "
                  "`on_timeout`/`default`"], id="on-timeout-without-timeout"),
    pytest.param("      kind: approve\n      prompt: p\n      approvers: [ops, '']\n",
                 ["pb.yaml:9:7: NTL218 `approvers` holds '', which is not a name (workflow[0].tool.approvers) — "
                  "fix: list the names that may answer: `approvers: [ops, alice]`"], id="empty-approver"),
    pytest.param("      kind: approve\n      fields: {ok: boolean}\n",
                 ["pb.yaml:6:5: NTL309 approve task 's_task' has no `prompt` (workflow[0].tool) — fix: add "
                  "`prompt:` to the task (what the person is asked (shown by `status`, the page and the Temporal "
                  "UI))"], id="no-prompt"),
])
def test_refusals_are_located(task, expected):
    assert _messages(task) == expected


def test_a_list_form_keeps_its_order_and_is_located_by_entry():
    assert _messages("      kind: approve\n      prompt: p\n      fields:\n        - {name: ok, type: boolean}\n"
                     "        - {name: env, type: strin}\n") == [
        "pb.yaml:11:11: NTL214 field 'env' has type 'strin' (workflow[0].tool.fields[1]) — fix: use one of string, "
        "boolean, integer, number"]
    assert _messages("      kind: approve\n      prompt: p\n      fields:\n        - {type: boolean}\n") == [
        "pb.yaml:9:7: NTL214 a `fields` list holds an entry without a `name` (workflow[0].tool.fields) — fix: write "
        "`fields: [{name: approved, type: boolean}, ...]`"]


def test_a_templated_form_is_left_to_the_run():
    assert _messages("      kind: approve\n      prompt: p\n      fields: \"{{ workload.form }}\"\n") == []
