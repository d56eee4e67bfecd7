"""``noetl-temporal status ID`` and ``noetl-temporal events ID``.

Both read live state from Temporal when an address is configured and the execution is
open, and the event store otherwise (an execution run with the embedded dev server is
still readable from the store after that server stopped).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, NotFound
from .connection import add_connection_arguments, target_of

if TYPE_CHECKING:   # (imported when a command runs: --help stays fast)
    from ..client.liveness import Liveness

__all__ = ["add_status_arguments", "status_command", "add_events_arguments", "events_command"]


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="execution id (printed by `run`)")
    add_connection_arguments(parser, without_address="only the event store is read", task_queue=False)
    parser.add_argument("--event-store", metavar="URL",
                        help="event store: SQLite file (path or file:// URL) or postgresql:// URL (default: the "
                             "events of $NOETL_STORE, else ~/.local/share/noetl-temporal/events.db)")


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    _connection_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the status object as JSON")
    parser.add_argument("--playbook", action="store_true",
                        help="also print the definition the execution runs, pinned at its start: playbook name, "
                             "path, version, sha256, source (needs Temporal; JSON: a `playbook` object)")


def add_events_arguments(parser: argparse.ArgumentParser) -> None:
    _connection_arguments(parser)
    parser.add_argument("--type", dest="types", action="append", metavar="TYPE",
                        help="only this event type (canonical, 'task.*', or a legacy name such as "
                             "step.exit); repeatable")
    parser.add_argument("--entity", metavar="NAME", help="only events of this entity (step or task name)")
    parser.add_argument("--after-seq", type=int, default=0, metavar="N", help="only events with seq > N")
    parser.add_argument("--limit", type=int, default=1000, metavar="N", help="at most N events (default 1000)")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new events until the end")
    parser.add_argument("--json", action="store_true", help="one JSON event per line")


async def _client(args: argparse.Namespace):
    from ..client.connect import connect

    target = target_of(args)
    if target.address is None:
        return None
    return await connect(target)


def _store(args: argparse.Namespace):
    from ..store.event_store import open_event_store

    return open_event_store(args.event_store)


def _run(coro) -> int:
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError

    try:
        return asyncio.run(coro)
    except NotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (RPCError, WorkflowQueryFailedError) as exc:  # Temporal or its workers did not answer
        print(f"error: Temporal could not answer: {exc}; try again, or pass --event-store to read "
              "the stored events", file=sys.stderr)
        return 1


def status_command(args: argparse.Namespace) -> int:
    from ..client.observe import read_status_view

    async def go() -> int:
        client = await _client(args)
        status, liveness = await read_status_view(client, args.execution_id, _store(args))
        if client is not None:   # a redrive says what it reused and reran (docs/operations.md)
            from ..client.redrive_start import redrive_summary

            summary = await redrive_summary(client, args.execution_id,
                                            ask_workflow=liveness is None or liveness.workers_polling > 0)
            status = {**status, **(summary or {})}
            from ..client.step_notes import skipped_steps

            # the steps an operator skipped, with who and why (docs/approvals.md)
            skipped = await skipped_steps(client, args.execution_id,
                                          ask_workflow=liveness is None or liveness.workers_polling > 0)
            status = {**status, **(skipped or {})}
        if args.playbook:
            status = {**status, "playbook": await _pinned(client, args.execution_id)}
        if args.json:
            print(json.dumps(status, indent=2))
        else:
            for key, value in status.items():
                if key == "playbook":   # --playbook: one line per field, as playbook.<field>
                    for field, text in value.items():
                        print(f"{'playbook.' + field:<20} {_plain(text)}")
                elif key in ("reused_steps", "rerun_steps"):
                    print(f"{key:<20} {_names(value)}")
                elif key == "retrying":   # one line per fast-path task waiting out a backoff
                    for wait in value:
                        print(f"{key:<20} {_retrying_line(wait)}")
                elif key == "skipped_steps":   # one line per skipped step: who and why
                    for name, note in value.items():
                        print(f"{'skipped.' + name:<20} SKIPPED by {note.get('by') or 'unknown'}: {note.get('reason')}")
                else:
                    print(f"{key:<20} {_plain(value)}")
        if liveness is not None and liveness.workers_polling == 0:
            _warn_no_worker(liveness)
        return 0

    return _run(go())


async def _pinned(client: Any, execution_id: str) -> dict[str, Any]:
    """What ``--playbook`` adds: read from the workflow's input, which carries the definition."""
    from ..client import control

    if client is None:
        raise ConfigError("--playbook reads the execution's input from Temporal",
                          fix="pass --address HOST:PORT or set TEMPORAL_ADDRESS")
    return control.pinned_playbook(await control.read_input(client, execution_id))


def _retrying_line(wait: dict[str, Any]) -> str:
    """``fetch: attempt 2 waits until T (last error: ...)``: a fast-path task waiting to retry."""
    from ..client.oneline import one_line
    from ..engine.progress import retrying_text  # the page's and the current details' words

    where = f" (iteration {wait['iteration']})" if wait.get("iteration") is not None else ""
    return f"{wait.get('step')}{where}: " + retrying_text({**wait, "last_error": one_line(wait.get("last_error"), 200)})


def _names(names: list[str], shown: int = 20) -> str:
    """A redrive's step list on one line: the first few, and how many more (--json has all)."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{len(names)}: {', '.join(names[:shown])}{more}" if names else "0"


def _plain(value: Any) -> str:
    """A status value as text: strings as they are, the rest as JSON (``null``, ``false``),
    the spelling of ``--json`` and the API rather than Python's ``None``/``False``."""
    return value if isinstance(value, str) else json.dumps(value)


def _warn_no_worker(liveness: Liveness) -> None:
    """Why an open execution makes no progress, on stderr (stdout stays the status)."""
    print(f"warning: no worker is polling task queue {liveness.task_queue!r}: the execution waits until one "
          f"runs (noetl-temporal worker --task-queue {liveness.task_queue} --address ...)", file=sys.stderr)
    for task in liveness.pending:
        print(f"  {task.line()}", file=sys.stderr)


def _line(event: dict[str, Any]) -> str:
    extra = []
    for key in ("iteration", "attempt", "duration_ms"):
        if event.get(key) is not None:
            extra.append(f"{key}={event[key]}")
    payload: dict[str, Any] = event["payload"] if isinstance(event.get("payload"), dict) else {}
    if payload.get("reused"):   # a redrive ended it with the old execution's result: no tool ran
        extra.append(f"reused from {payload.get('redriven_from')}")
    elif event.get("event_type") == "execution.redriven_from":
        extra.append(f"from {payload.get('redriven_from')}, reusing {len(payload.get('reused_steps') or [])} steps")
    elif event.get("event_type") == "execution.redriven":
        extra.append(f"by {payload.get('redriven_by')}")
    elif event.get("event_type") == "step.skipped":   # an operator's skip: who and why
        extra.append(f"by {payload.get('by') or 'unknown'}: {payload.get('reason')}")
    elif (payload.get("meta") or {}).get("step_status") == "SKIPPED":
        extra.append("SKIPPED")
    return (f"{event['seq']:>5} {event['timestamp']} {event['event_type']:<24} {event.get('entity_id') or '':<20} "
            f"{event.get('status') or ''} {' '.join(extra)}").rstrip()


def events_command(args: argparse.Namespace) -> int:
    from ..client.observe import follow_events, read_events

    async def go() -> int:
        client = await _client(args)
        store = _store(args)

        def show(event: dict[str, Any]) -> None:
            print(json.dumps(event, default=str) if args.json else _line(event), flush=True)

        if args.follow:
            async for event in follow_events(client, args.execution_id, store=store, after_seq=args.after_seq,
                                             types=args.types, entity=args.entity):
                show(event)
            return 0
        for event in await read_events(client, args.execution_id, store=store, after_seq=args.after_seq,
                                       limit=args.limit, types=args.types, entity=args.entity):
            show(event)
        return 0

    return _run(go())
