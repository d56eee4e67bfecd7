"""``kind: subscription`` (tools/nats.py): NoETL's bounded drain of a message source.

Only ``source: nats`` runs here (the same drain as ``nats``'s ``js_consume``); Kafka and
Google Pub/Sub need services this project does not run, and are refused at validation.
"""

from .declaration import Credentials, Setting, ToolKind
from .nats import CONNECTION, DRAIN
from .python import TIMEOUT

#: sources a subscription names that need a service noetl-temporal does not run -> what is missing
UNAVAILABLE_SOURCES: dict[str, tuple[str, str]] = {
    "kafka": ("a Kafka broker", "drain the topic from a `python` task with a Kafka client, or move the "
                                "messages to a NATS stream and use `source: nats`"),
    "pubsub": ("Google Cloud Pub/Sub (a Google account, or its emulator)",
               "pull from a `python` task with google-cloud-pubsub, or use `source: nats`"),
}

SUBSCRIPTION = ToolKind(
    kind="subscription",
    summary="drains a bounded batch from a NATS JetStream consumer (NoETL's `subscription`, `source: nats`)",
    settings=(
        Setting("source", ("string",), "`nats` (Kafka and Pub/Sub are refused: NTL330)",
                choices=("nats", *UNAVAILABLE_SOURCES)),
        Setting("operation", ("string",), "`poll` (the default, and the only one)", choices=("poll",)),
        *CONNECTION,
        *DRAIN,
        Setting("ack", ("boolean", "string"), "`on_success` (default), `auto` or `true`: acknowledge the drained "
                                              "messages; `manual`, `none` or `false`: leave them pending"),
        TIMEOUT,
        # the other sources' settings, accepted so that NTL330 is the one error such a task gets
        Setting("topic", ("string",), "Kafka only (refused)"),
        Setting("group", ("string",), "Kafka only (refused)"),
        Setting("brokers", ("string", "list"), "Kafka only (refused)"),
        Setting("subscription", ("string",), "Pub/Sub only (refused)"),
        Setting("endpoint", ("string",), "Pub/Sub only (refused)"),
    ),
    # Kafka and Pub/Sub name their own settings (`topic`, `subscription` ...): `stream` and
    # `consumer` are checked by the tool for `source: nats`, not required of every source
    required=(("source",),),
    refused={"source": UNAVAILABLE_SOURCES},
    credentials=Credentials(auth="auth", connection=("user", "password", "token")),
)
