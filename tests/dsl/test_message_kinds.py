"""`kind: nats` and `kind: subscription` validate with NoETL's shapes; a subscription source
this project cannot reach (Kafka, Pub/Sub) is refused by name (NTL330), located."""

from __future__ import annotations

from tests.support.corpus import NOETL_E2E

from .helpers import codes, diags, errors, find, playbook


def test_noetl_nats_fixture_validates() -> None:
    path = NOETL_E2E / "fixtures/playbooks/test_nats_kv.yaml"
    assert [d for d in diags(path.read_text(encoding="utf-8")) if d.severity == "error"] == []


def test_subscription_kafka_is_refused_naming_the_missing_broker() -> None:
    text = playbook("workflow:\n  - step: a\n    tool:\n      kind: subscription\n      source: kafka\n"
                    "      topic: t\n      group: g\n")
    (diag,) = errors(text)
    assert diag.code == "NTL330" and diag.path == "workflow[0].tool.source"
    assert (diag.line, diag.col) == find(text, "kafka")
    assert "needs a Kafka broker" in diag.message and "source: nats" in diag.fix


def test_subscription_pubsub_is_refused_too() -> None:
    text = playbook("workflow:\n  - step: a\n    tool: {kind: subscription, source: pubsub, subscription: s}\n")
    assert codes(errors(text)) == ["NTL330"]
    assert "Pub/Sub" in errors(text)[0].message


def test_subscription_nats_validates() -> None:
    text = playbook("workflow:\n  - step: a\n    tool: {kind: subscription, source: nats, auth: n, stream: S, "
                    "consumer: c, batch: 10, timeout_ms: 500, ack: on_success}\n")
    assert errors(text) == []


def test_an_unknown_nats_operation_is_located_with_did_you_mean() -> None:
    text = playbook("workflow:\n  - step: a\n    tool: {kind: nats, url: 'nats://x:4222', operation: kv_gte}\n")
    (diag,) = errors(text)
    assert diag.code == "NTL316" and "kv_get" in diag.message and diag.path == "workflow[0].tool.operation"


def test_a_nats_task_needs_an_operation() -> None:
    text = playbook("workflow:\n  - step: a\n    tool: {kind: nats, url: 'nats://x:4222', subject: s}\n")
    assert codes(errors(text)) == ["NTL309"]
