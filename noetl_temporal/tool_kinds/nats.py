"""``kind: nats`` (tools/nats.py): NATS core messages, JetStream, key-value and object store.

The operations and their settings are NoETL's (its ``nats`` tool), plus core ``publish`` and
``request``; ``js_consume`` is the bounded drain (docs/tools.md, "nats").
"""

from .declaration import Credentials, Setting, ToolKind
from .python import TIMEOUT

#: every operation a nats task may name (NoETL's, then the core ones it lacks)
OPERATIONS: tuple[str, ...] = (
    "kv_get", "kv_put", "kv_delete", "kv_keys", "kv_purge",
    "object_get", "object_put", "object_delete", "object_list", "object_info",
    "js_publish", "js_consume", "js_get_msg", "js_stream_info",
    "publish", "request",
)

#: the connection settings both NATS kinds share: a server URL (coordinates, not a secret)
#: and the secrets, which may only come from the keychain
CONNECTION: tuple[Setting, ...] = (
    Setting("auth", ("string", "mapping"), "the name of a keychain entry with `url` (or `nats_url`, `server`) "
                                           "and optionally `user`, `password` or `token` (docs/keychain.md)"),
    Setting("url", ("string",), "the server, `nats://host:4222` (default: the keychain entry's `url`)",
            aliases=("nats_url", "server", "servers")),
    Setting("user", ("string",), "only from a keychain template", aliases=("username",)),
    Setting("password", ("string",), "only from a keychain template"),
    Setting("token", ("string",), "only from a keychain template"),
)

#: the bounded drain's limits (``js_consume`` and ``subscription``)
DRAIN: tuple[Setting, ...] = (
    Setting("stream", ("string",), "the JetStream stream"),
    Setting("consumer", ("string",), "`js_consume`: the durable pull consumer (it must exist)"),
    Setting("batch", ("integer", "string"), "`js_consume`: at most this many messages (default 100, at most 1000)",
            aliases=("max_messages",)),
    Setting("max_bytes", ("integer", "string"), "`js_consume`: stop once the messages' payloads reach this many "
                                                "bytes (default: no byte limit beyond the result cap)"),
    Setting("timeout_ms", ("integer", "string"), "`js_consume`, `request`: how long to wait, in milliseconds "
                                                 "(`js_consume`: default 1000, at most 5000)"),
)

NATS = ToolKind(
    kind="nats",
    summary="publishes and requests on NATS; JetStream, key-value and object store operations",
    settings=(
        Setting("operation", ("string",), "what to do: " + ", ".join(f"`{o}`" for o in OPERATIONS),
                choices=OPERATIONS),
        *CONNECTION,
        Setting("bucket", ("string",), "the key-value or object store bucket"),
        Setting("key", ("string",), "`kv_*`: the key"),
        Setting("value", ("any",), "`kv_put`: the value (a mapping or list is stored as JSON)"),
        Setting("pattern", ("string",), "`kv_keys`: only keys matching this glob"),
        Setting("name", ("string",), "`object_*`: the object's name"),
        Setting("data", ("any",), "`publish`, `request`, `js_publish`, `object_put`: the payload (a mapping or "
                                  "list is sent as JSON)", aliases=("payload",)),
        Setting("encoding", ("string",), "`object_get`, `object_put`: `utf-8` (default) or `base64`",
                choices=("utf-8", "base64")),
        Setting("description", ("string",), "`object_put`: the object's description"),
        Setting("subject", ("string",), "`publish`, `request`, `js_publish`: the subject; `js_get_msg`: "
                                        "the last message on it"),
        Setting("headers", ("mapping",), "`publish`, `request`, `js_publish`: message headers"),
        Setting("seq", ("integer", "string"), "`js_get_msg`: the message's sequence number"),
        Setting("last", ("boolean", "string"), "`js_get_msg`: the stream's last message"),
        *DRAIN,
        Setting("ack", ("boolean", "string"), "`js_consume`: acknowledge the drained messages (default true)"),
        TIMEOUT,
    ),
    required=(("operation",),),
    ignored={"ttl": "NATS keeps a time to live per bucket, not per key (NoETL ignores it too); set the "
                    "bucket's `max_age` when creating it"},
    # the server's secrets come from the keychain: written in the playbook they would land in history
    credentials=Credentials(auth="auth", connection=("user", "password", "token")),
)
