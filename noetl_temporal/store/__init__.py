"""Durable stores: the event log (and, in ``catalog``, playbook versions; in ``large_results``,
task results too large for workflow history)."""

from .event_store import (
           EventStore,
           PostgresEventStore,
           SqliteEventStore,
           default_event_store_url,
           open_event_store,
)

__all__ = ["EventStore", "SqliteEventStore", "PostgresEventStore", "open_event_store",
           "default_event_store_url"]
