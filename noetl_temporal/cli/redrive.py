"""``noetl-temporal redrive ID [--from STEP] [--playbook FILE | --latest]``: rerun what failed.

Starts a new execution that reuses the recorded results of the steps the old one completed
and reruns the rest (``noetl_temporal.client.redrive_start``; docs/operations.md). Prints what it
started as JSON. Exit codes: 0 started (with ``--wait``: and COMPLETED), 1 the execution is
unknown, still running, or cannot be redriven as asked (with ``--wait``: the redrive did not
complete), 2 usage, connection or an invalid ``--playbook``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from .connection import add_connection_arguments, connect_to

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="the FAILED or CANCELLED execution to redrive")
    parser.add_argument("--from", dest="from_step", metavar="STEP",
                        help="rerun from this step (and everything after it) even if it completed")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--playbook", metavar="FILE",
                       help="run this (newer) playbook; a step whose definition changed reruns, with what follows it")
    which.add_argument("--latest", action="store_true",
                       help="run the playbook file the execution was started from as it is now (default: the "
                            "definition it started with)")
    parser.add_argument("--wait", action="store_true",
                        help="wait for the redrive to end and print its output (exit 0 only if COMPLETED)")
    parser.add_argument("--event-store", metavar="URL",
                        help="where the old execution's events are, to note the redrive there: SQLite file or "
                             "postgresql:// URL (default: the events of $NOETL_STORE, else the local file)")
    add_connection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..client.redrive_start import redrive
    from ..conversion.playbook_result import workflow_output
    from ..dsl import load_playbook
    from ..errors import ConfigError, NoetlError, PayloadTooLarge, PlaybookInvalid
    from ..store.event_store import open_event_store

    playbook = None
    if args.playbook:
        try:
            playbook = load_playbook(args.playbook).playbook
        except PlaybookInvalid as exc:
            for diag in exc.diagnostics:
                print(diag, file=sys.stderr)
            print(f"error: {args.playbook} is not a valid playbook; fix the errors above", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"error: cannot read {args.playbook}: {exc.strerror or exc}", file=sys.stderr)
            return 2

    async def go() -> tuple[dict, dict | None]:
        target, client = await connect_to(args, needs="redrive needs the Temporal server the execution ran on")
        try:
            store = open_event_store(args.event_store)
        except Exception:   # no store to note the redrive in: the new execution still names the old one
            store = None
        started = await redrive(client, args.execution_id, from_step=args.from_step, playbook=playbook,
                                latest=args.latest, playbook_source=args.playbook,
                                task_queue=args.task_queue, event_store=store,
                                search_attributes=True)   # as `run` does (without them: a warning)
        output = None
        if args.wait:
            try:
                output = await workflow_output(client.get_workflow_handle(started["execution_id"]))
            except Exception as exc:   # cancelled, terminated, timed out: no playbook output
                output = {"state": "FAILED", "error": str(exc)}
        return started, output

    try:
        started, output = asyncio.run(go())
    except (ConfigError, PayloadTooLarge) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NoetlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if output is not None:
        started = {**started, "state": output.get("state"), "output": output}
    print(json.dumps(started, indent=2, default=str))
    return 0 if output is None or output.get("state") == "COMPLETED" else 1
