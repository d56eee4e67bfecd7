"""`kind: nats` and `kind: subscription` end to end on the dev server, against the test NATS
server (tests/support/nats_server.py), the connection from the keychain."""

from __future__ import annotations

import json

import pytest

from tests.support import nats_server

pytestmark = pytest.mark.temporal


@pytest.fixture
async def stream(monkeypatch: pytest.MonkeyPatch):
    import nats
    from nats.js.api import ConsumerConfig

    url = nats_server.require_url()
    monkeypatch.setenv("NOETL_KEYCHAIN_NATS_MAIN", json.dumps({"url": url}))
    nc = await nats.connect(url)
    js = nc.jetstream()
    name, subject = nats_server.unique("ORDERS"), nats_server.unique("orders")
    await js.add_stream(name=name, subjects=[subject])
    await js.add_consumer(name, ConsumerConfig(durable_name="drain"))
    yield name, subject
    await js.delete_stream(name)
    await nc.close()


async def test_publish_then_drain_then_fan_out(run_yaml, stream) -> None:
    name, subject = stream
    report = await run_yaml(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: nats_drain}}
        workflow:
          - step: start
            tool:
              - first: {{kind: nats, auth: nats_main, operation: js_publish, subject: {subject}, data: {{n: 1}}}}
              - second: {{kind: nats, auth: nats_main, operation: js_publish, subject: {subject}, data: {{n: 2}}}}
            next: {{arcs: [{{step: drain}}]}}
          - step: drain
            tool:
              kind: subscription
              source: nats
              auth: nats_main
              stream: {name}
              consumer: drain
              batch: 10
              timeout_ms: 500
            next: {{arcs: [{{step: total}}]}}
          - step: total
            tool:
              kind: python
              input: {{messages: "{{{{ drain.messages }}}}", count: "{{{{ drain.count }}}}"}}
              code: |
                result = {{"count": count, "sum": sum(m["data"]["n"] for m in messages)}}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["drain"]["result"]["acked"] is True
    assert report.steps["total"]["result"] == {"count": 2, "sum": 3}


async def test_a_password_written_in_the_playbook_is_refused(run_yaml, stream) -> None:
    _name, subject = stream
    report = await run_yaml(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: nats_secret}}
        workflow:
          - step: start
            tool: {{kind: nats, auth: nats_main, password: hunter2, operation: publish, subject: {subject}}}
    """)
    assert report.state == "FAILED"
    assert "written in the playbook" in (report.error or "")
