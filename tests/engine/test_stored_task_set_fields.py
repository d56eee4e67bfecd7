"""A task's own plain-name ``set:`` reads the task's stored result through its kept fields
(behaviours.STORED_TASK_SET_FIELDS; docs/tools.md, "Large results"): there ``output`` is the
result itself (docs/semantics.md), the graph keeps the paths read so, a kept field is served
and a part over what the workflow keeps fails the task located, never undefined."""

from __future__ import annotations

from noetl_temporal.engine.behaviours import CURRENT, STORED_TASK_SET_FIELDS

from .harness import ok, run

REF = {"kind": "result_ref", "ref": "noetl://fs/ex/fetch-1.json", "store": "fs", "meta": {"bytes": 184_000},
       "kept_max_bytes": 65536, "fields": {"data.paging.total": 6000}, "omitted": {"data.data": 180_000},
       "lengths": {"data.data": 6000}, "absent": []}


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
            set: {{got: "{read}"}}
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
    r = run(_playbook("{{ output.data.paging.total }}"), _tool)
    assert r.status == "COMPLETED", r.events[-3:]
    assert _use_args(r) == [{"got": 6000}]


def test_the_task_keeps_the_paths_its_plain_set_reads():
    for loop in ("", '        loop: {in: "{{ [1] }}", iterator: i}\n'):
        r = run(_playbook("{{ output.data.paging.total }}", loop), _tool)
        keep = [c.result_spec.get("keep") for c in r.ran if c.task == "fetch"]
        assert keep and "data.paging.total" in keep[0], keep   # the result's own path, not the envelope's


def test_a_part_over_the_kept_fails_the_task_located():
    r = run(_playbook("{{ output.data.data }}"), _tool)
    assert r.status == "FAILED"
    assert _use_args(r) == []   # the next task never ran with None
    failed = [e for e in r.events if e["event_type"] == "step.failed"]
    message = str(failed[0]["payload"])
    assert "start.tool.fetch.set" in message
    assert "{{ output.data.data }}" in message and "`start.data.data`" in message
    assert "175.8 KB" in message and "64.0 KB" in message


def test_before_the_behaviour_the_read_was_the_reference():
    old = [b for b in CURRENT if b != STORED_TASK_SET_FIELDS]
    r = run(_playbook("{{ output.data.paging.total }}"), _tool, behaviours=old)
    assert r.status == "COMPLETED"
    assert _use_args(r) == [{"got": None}]
