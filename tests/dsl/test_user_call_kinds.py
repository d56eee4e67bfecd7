"""``kind: activity`` and ``kind: workflow`` (a user's own Temporal code) as ``validate``
sees them: a missing type name or task queue, a wrong ``args`` type, a value Temporal would
refuse, each located in the file; ``name:`` is the type name as well as the label."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import load_playbook_text, validate_text

HEAD = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nworkflow:\n  - step: s\n    tool:\n"


def _messages(tasks: str) -> list[str]:
    return [str(d) for d in validate_text(HEAD + tasks, "pb.yaml")]


@pytest.mark.parametrize("tasks, expected", [
    pytest.param("      - pay: {kind: activity, task_queue: billing}\n",
                 ["pb.yaml:7:9: NTL309 activity task 'pay' has no `name` (workflow[0].tool[0].pay)"],
                 id="activity-without-name"),
    pytest.param("      - name: charge\n        kind: activity\n",
                 ["pb.yaml:7:9: NTL309 activity task 'charge' has no `task_queue` (workflow[0].tool[0])"],
                 id="activity-without-task-queue"),
    pytest.param("      - sub: {kind: workflow, name: Greet}\n",
                 ["pb.yaml:7:9: NTL309 workflow task 'sub' has no `task_queue` (workflow[0].tool[0].sub)"],
                 id="workflow-without-task-queue"),
    pytest.param("      - pay: {kind: activity, name: charge, task_queue: q, args: 3}\n",
                 ["pb.yaml:7:66: NTL311 `args` (activity) must be list or mapping, not integer "
                  "(workflow[0].tool[0].pay.args)"],
                 id="args-neither-list-nor-mapping"),
    pytest.param("      - sub: {kind: workflow, name: G, task_queue: q, parent_close_policy: kill}\n",
                 ["pb.yaml:7:76: NTL316 `parent_close_policy` (workflow) is 'kill' "
                  "(workflow[0].tool[0].sub.parent_close_policy) — fix: write one of terminate, abandon, "
                  "request_cancel"],
                 id="unknown-parent-close-policy"),
    pytest.param("      - pay: {kind: activity, name: c, task_queue: q, heartbeat_timeout: 0}\n",
                 ["pb.yaml:7:74: NTL316 `heartbeat_timeout` (activity) is 0: a number of seconds must be > 0 "
                  "(workflow[0].tool[0].pay.heartbeat_timeout)"],
                 id="zero-heartbeat-timeout"),
    pytest.param("      - pay: {kind: activity, name: c, task_queue: q, args: ['{{ keychain.card.number }}']}\n",
                 ["pb.yaml:7:61: NTL704 `args` (activity) reads `keychain`: a `kind: activity` task is called by the workflow"],
                 id="keychain-in-args"),
    pytest.param("      - pay: {kind: activity, name: c, task_queue: q, hearbeat_timeout: 5}\n",
                 ["pb.yaml:7:55: NTL310 activity tasks have no setting `hearbeat_timeout` "
                  "(did you mean 'heartbeat_timeout'?)"],
                 id="misspelt-setting"),
])
def test_refusals_are_located(tasks: str, expected: list[str]) -> None:
    got = _messages(tasks)
    assert len(got) == len(expected), got
    for message, start in zip(got, expected, strict=True):
        assert message.startswith(start), message


def test_name_is_the_type_name_and_the_label() -> None:
    text = HEAD + ("      - name: charge_card\n        kind: activity\n        task_queue: billing\n"
                   "        args: [1, '{{ workload.x }}']\n"
                   "      - child: {kind: workflow, name: Greet, task_queue: q, args: {who: a}, "
                   "parent_close_policy: abandon, id: 'greet-{{ execution_id }}'}\n")
    assert _messages(text[len(HEAD):]) == []
    playbook = load_playbook_text(text, "pb.yaml")
    first, second = playbook.playbook.workflow[0].tool
    assert (first.name, first.config["name"], first.config["args"]) == ("charge_card", "charge_card",
                                                                        [1, "{{ workload.x }}"])
    assert (second.name, second.config["name"], second.config["args"]) == ("child", "Greet", {"who": "a"})
