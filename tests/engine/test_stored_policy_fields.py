"""A task's policy ``then.set`` reads the task's stored result through its kept fields
(behaviours.STORED_POLICY_FIELDS; docs/tools.md, "Large results"): a kept field is served, a
part over what the workflow keeps fails the task located, never undefined."""

from __future__ import annotations

from noetl_temporal.engine.behaviours import CURRENT, STORED_POLICY_FIELDS

from .harness import ok, run

REF = {"kind": "result_ref", "ref": "noetl://fs/ex/fetch-1.json", "store": "fs", "meta": {"bytes": 184_000},
       "kept_max_bytes": 65536, "fields": {"data.count": 6000}, "omitted": {"data.rows": 180_000},
       "lengths": {"data.rows": 6000}, "absent": []}


def _playbook(read: str, loop: str = "") -> str:
    return f"""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {{name: p}}
    workflow:
      - step: start
{loop}        tool:
          - name: fetch
            kind: http
            url: http://127.0.0.1:1/rows
            spec:
              policy:
                rules:
                  - else:
                      then: {{do: continue, set: {{got: "{read}"}}}}
          - name: use
            kind: python
            args: {{got: "{{{{ got }}}}"}}
            code: "result = got"
    """


def _tool(cmd):
    return {**ok(REF), "result_ref": REF} if cmd.task == "fetch" else ok({"args": cmd.config.get("args")})


def _use_args(r) -> list:
    return [c.config.get("args") for c in r.ran if c.task == "use"]


def test_a_kept_field_is_served():
    r = run(_playbook("{{ output.data.data.count }}"), _tool)
    assert r.status == "COMPLETED", r.events[-3:]
    assert _use_args(r) == [{"got": 6000}]


def test_a_part_over_the_kept_fails_the_task_located():
    r = run(_playbook("{{ output.data.data.rows }}"), _tool)
    assert r.status == "FAILED"
    assert _use_args(r) == []   # the next task never ran with None
    failed = [e for e in r.events if e["event_type"] == "step.failed"]
    message = str(failed[0]["payload"])
    assert "start.tool.fetch.spec.policy.rules[0].then" in message
    assert "{{ output.data.data.rows }}" in message and "`start.data.rows`" in message
    assert "175.8 KB" in message and "64.0 KB" in message


def test_in_a_loop_the_task_keeps_the_path_its_policy_reads():
    r = run(_playbook("{{ output.data.data.rows }}", '        loop: {in: "{{ [1] }}", iterator: i}\n'), _tool)
    keep = [c.result_spec.get("keep") for c in r.ran if c.task == "fetch"]
    assert keep and "data.rows" in keep[0]   # the result's path (the http body's `rows`)


def test_before_the_behaviour_the_read_was_the_reference():
    old = [b for b in CURRENT if b != STORED_POLICY_FIELDS]
    r = run(_playbook("{{ output.data.data.rows }}"), _tool, behaviours=old)
    assert r.status == "COMPLETED"
    assert _use_args(r) == [{"got": None}]
