"""Durable stores: the event log (and, in ``catalog``, playbook versions; in ``large_results``,
task results too large for workflow history; in ``payloads``, the claim check's payloads).
Where events, results and payloads live is one URL, ``$NOETL_STORE`` (``blobs``)."""

from .event_store import (
           EventStore,
           PostgresEventStore,
           SqliteEventStore,
           default_event_store_url,
           open_event_store,
)

__all__ = ["EventStore", "SqliteEventStore", "PostgresEventStore", "open_event_store",
           "default_event_store_url"]
