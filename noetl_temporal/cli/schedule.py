"""``noetl-temporal schedule create|list|describe|pause|unpause|trigger|backfill|delete``:
playbook schedules as Temporal Schedules (``noetl_temporal.client.schedules``, the same
module as the API's ``/schedules``; docs/schedules.md).

Exit codes: 0 done, 1 the schedule is unknown or the name is taken, 2 invalid input (a
playbook that does not validate, a bad cron expression or duration) or no server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from ..errors import ConfigError, NoetlError, NotFound, PayloadTooLarge, PlaybookInvalid
from .connection import add_connection_arguments, connect_to

__all__ = ["add_schedule_arguments", "schedule_command", "SUBCOMMANDS", "OVERLAPS"]

_NEEDS = "schedules live on a running Temporal server"

#: the keys of ``temporal.schedules.OVERLAP_POLICIES``, spelled here so ``--help`` does not import
#: temporalio (tests/cli/test_cli_schedules.py holds them equal)
OVERLAPS = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")

#: each subcommand -> its one-line help
SUBCOMMANDS = {
    "create": "create a schedule running PLAYBOOK on --cron or --every (validated first; a Temporal Schedule, "
              "shown on the Temporal UI's schedules page)",
    "list": "list the playbook schedules of the namespace",
    "describe": "print one schedule: its playbook (name, version, sha256), times, policies, recent and next runs",
    "pause": "pause a schedule (no runs start until unpaused)",
    "unpause": "unpause a schedule",
    "trigger": "start one run of a schedule now",
    "backfill": "start the runs a schedule would have started between --start and --end",
    "delete": "delete a schedule (the runs it started go on)",
}


def _connection(parser: argparse.ArgumentParser, task_queue: bool = False) -> None:
    add_connection_arguments(parser, task_queue=task_queue)


def add_schedule_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="schedule_command", metavar="SUBCOMMAND", required=True)
    parsers = {name: sub.add_parser(name, help=text, description=text) for name, text in SUBCOMMANDS.items()}

    create = parsers["create"]
    create.add_argument("name", metavar="NAME", help="schedule name (its Temporal schedule id; each run's "
                                                     "execution id is NAME-<scheduled time>)")
    create.add_argument("playbook", metavar="PLAYBOOK", help="playbook YAML file (validated now, and pinned: "
                                                             "later edits of the file do not change the schedule)")
    when = create.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", metavar="EXPR", action="append",
                      help="cron expression (five fields, e.g. '0 * * * *', or @hourly, @daily ...); repeatable")
    when.add_argument("--every", metavar="DURATION", help="interval, e.g. 30s, 10m, 1h30m")
    create.add_argument("--payload", metavar="JSON", help="payload of every run: a JSON object, or @FILE")
    create.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="one payload value of every run (as `run --set`); repeatable")
    create.add_argument("--overlap", choices=OVERLAPS, default="skip",
                        help="when a run is due while the last one still runs (default: skip)")
    create.add_argument("--catchup-window", metavar="DURATION",
                        help="runs missed while Temporal was down are started if at most this late "
                             "(default: Temporal's, one year)")
    create.add_argument("--jitter", metavar="DURATION", help="start each run up to this much later, at random")
    create.add_argument("--time-zone", metavar="TZ", help="time zone of --cron (default UTC), e.g. Europe/Paris")
    create.add_argument("--paused", action="store_true", help="create it paused")
    create.add_argument("--note", metavar="TEXT", help="a note shown with the schedule")
    create.add_argument("--execution-timeout", metavar="DURATION",
                        help="each run's execution timeout (default: the playbook's executor.spec.timeout_s)")
    _connection(create, task_queue=True)

    for name in ("describe", "pause", "unpause", "trigger", "backfill", "delete"):
        parsers[name].add_argument("name", metavar="NAME", help="schedule name")
    for name in ("pause", "unpause"):
        parsers[name].add_argument("--note", metavar="TEXT", help="why (shown with the schedule)")
    parsers["trigger"].add_argument("--overlap", choices=OVERLAPS,
                                    help="overlap policy of this run (default: the schedule's)")
    backfill = parsers["backfill"]
    backfill.add_argument("--start", metavar="TIME", required=True, help="RFC 3339, e.g. 2026-01-31T00:00:00Z")
    backfill.add_argument("--end", metavar="TIME", required=True, help="RFC 3339 (after --start)")
    backfill.add_argument("--overlap", choices=OVERLAPS, default="allow_all",
                          help="overlap policy of the backfilled runs (default: allow_all, since they start "
                               "together)")
    parsers["list"].add_argument("--json", action="store_true", help="print the list as JSON")
    for name, child in parsers.items():
        if name != "create":
            _connection(child)


async def _create(args: argparse.Namespace, client: Any, target: Any) -> dict[str, Any]:
    from ..client import schedules
    from ..dsl import load_playbook
    from .run import parse_payload

    payload = parse_payload(args.payload, args.sets)
    loaded = load_playbook(args.playbook)   # PlaybookInvalid: every located error, before anything exists
    every = schedules.parse_duration(args.every, "--every") if args.every else None
    catchup = schedules.parse_duration(args.catchup_window, "--catchup-window") if args.catchup_window else None
    jitter = schedules.parse_duration(args.jitter, "--jitter") if args.jitter else None
    timeout = (schedules.parse_duration(args.execution_timeout, "--execution-timeout").total_seconds()
               if args.execution_timeout else None)
    return await schedules.create_schedule(
        client, args.name, loaded.playbook, cron=args.cron, every=every, payload=payload,
        task_queue=target.task_queue, source=args.playbook, overlap=args.overlap, catchup_window=catchup,
        jitter=jitter, paused=args.paused, note=args.note, execution_timeout_s=timeout, time_zone=args.time_zone)


async def _go(args: argparse.Namespace) -> int:
    from ..client import schedules

    target, client = await connect_to(args, needs=_NEEDS)
    command = args.schedule_command
    if command == "create":
        print(json.dumps(await _create(args, client, target), indent=2))
    elif command == "list":
        items = await schedules.list_schedules(client)
        if args.json:
            print(json.dumps(items, indent=2))
        else:
            for item in items:
                when = ", ".join([*item["cron"], *(f"every {s:g}s" for s in item["every_s"])])
                state = "paused" if item["paused"] else "active"
                print(f"{item['name']:<24} {state:<7} {when:<24} {item['playbook_path'] or ''}"
                      + (f" @ {item['playbook_version']}" if item["playbook_version"] else ""))
            if not items:
                print("no playbook schedules", file=sys.stderr)
    elif command == "describe":
        print(json.dumps(await schedules.describe_schedule(client, args.name), indent=2))
    elif command in ("pause", "unpause"):
        change = schedules.pause_schedule if command == "pause" else schedules.unpause_schedule
        described = await change(client, args.name, args.note)
        print(f"schedule {args.name}: {'paused' if described['paused'] else 'active'}")
    elif command == "trigger":
        await schedules.trigger_schedule(client, args.name, args.overlap)
        print(f"schedule {args.name}: triggered (its runs: `noetl-temporal schedule describe {args.name}`)")
    elif command == "backfill":
        start = schedules.parse_time(args.start, "--start")
        end = schedules.parse_time(args.end, "--end")
        await schedules.backfill_schedule(client, args.name, start, end, args.overlap)
        print(f"schedule {args.name}: backfill {args.start} .. {args.end} requested")
    elif command == "delete":
        await schedules.delete_schedule(client, args.name)
        print(f"schedule {args.name}: deleted")
    return 0


def schedule_command(args: argparse.Namespace) -> int:
    from ..client.schedules import ScheduleExists, ScheduleInvalid

    try:
        return asyncio.run(_go(args))
    except PlaybookInvalid as exc:
        for diag in exc.diagnostics:
            print(diag, file=sys.stderr)
        print(f"error: {args.playbook} is not a valid playbook; fix the errors above (see "
              "`noetl-temporal validate`)", file=sys.stderr)
        return 2
    except (ScheduleInvalid, ConfigError, PayloadTooLarge, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (NotFound, ScheduleExists, NoetlError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
