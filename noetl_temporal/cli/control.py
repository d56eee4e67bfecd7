"""``noetl-temporal cancel|pause|resume|ctx ID``: control a running execution.

The same control module as the REST API (``noetl_temporal.client.control``).
Exit codes: 0 done, 1 the execution is unknown or already finished, 2 usage or connection.
"""

from __future__ import annotations

import argparse
from typing import Any

from .connection import add_connection_arguments, run_call

__all__ = ["add_cancel_arguments", "add_pause_arguments", "add_resume_arguments", "add_ctx_arguments",
           "control_command"]


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="execution id")
    add_connection_arguments(parser, task_queue=False)


def _reason(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reason", metavar="TEXT", help="why (recorded in the events)")


def add_cancel_arguments(parser: argparse.ArgumentParser) -> None:
    _target_arguments(parser)
    _reason(parser)
    cascade = parser.add_mutually_exclusive_group()
    cascade.add_argument("--cascade", action="store_true",
                         help="cancel running sub-playbooks too (the default; NoETL's flag)")
    cascade.add_argument("--no-cascade", action="store_true", help="leave running sub-playbooks running")


def add_pause_arguments(parser: argparse.ArgumentParser) -> None:
    _target_arguments(parser)
    _reason(parser)


def add_resume_arguments(parser: argparse.ArgumentParser) -> None:
    _target_arguments(parser)


def add_ctx_arguments(parser: argparse.ArgumentParser) -> None:
    _target_arguments(parser)
    parser.add_argument("sets", nargs="+", metavar="KEY=VALUE",
                        help="ctx values to set (VALUE read as YAML); re-evaluates pending admission")


def control_command(args: argparse.Namespace) -> int:
    from ..client import control
    from .run import parse_payload

    async def call(client: Any) -> Any:
        if args.command == "cancel":
            return await control.cancel(client, args.execution_id, reason=args.reason,
                                        cascade=not args.no_cascade)
        if args.command == "pause":
            return await control.pause(client, args.execution_id, reason=args.reason)
        if args.command == "resume":
            return await control.resume(client, args.execution_id)
        return await control.patch_ctx(client, args.execution_id, parse_payload(None, args.sets))

    return run_call(args, call)
