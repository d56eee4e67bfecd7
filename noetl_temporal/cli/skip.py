"""``noetl-temporal skip ID STEP --reason TEXT [--result JSON]``: skip a running step; and
``pause-step`` / ``resume-step ID STEP``: hold one step's new runs.

The step's waiting task (running, retrying, or waiting for an answer) is cancelled and the
step ends SKIPPED with the given result, its arcs firing as for a success (docs/approvals.md,
"Skipping a running step"). Same call as ``POST /executions/{id}/steps/{step}/skip``.
Exit codes: 0 skipped, 1 unknown or finished execution, 2 usage, connection, or a skip
the workflow refused (the reason on stderr).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .approve import _login
from .connection import add_connection_arguments, run_call

__all__ = ["add_arguments", "run", "add_hold_arguments", "run_hold"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="execution id")
    parser.add_argument("step", metavar="STEP", help="the running step to skip")
    parser.add_argument("--reason", required=True, metavar="TEXT", help="why (required; recorded in step.skipped)")
    parser.add_argument("--result", metavar="JSON", help="the step's result instead of its task's (default null)")
    parser.add_argument("--iteration", type=int, metavar="N", help="the loop iteration to skip (loop steps)")
    parser.add_argument("--by", metavar="NAME", help="who skips (default: your login name)")
    add_connection_arguments(parser, task_queue=False)


def run(args: argparse.Namespace) -> int:
    from ..client.answers import skip
    from ..client.control import Rejected

    async def call(client: Any) -> Any:
        result = None
        if args.result is not None:
            try:
                result = json.loads(args.result)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--result is not valid JSON ({exc.msg}, column {exc.colno}); "
                                 "quote it: --result '{\"rows\": 0}'") from None
        return await skip(client, args.execution_id, args.step, reason=args.reason, result=result,
                          by=args.by or _login(), iteration=args.iteration)

    return run_call(args, call, refusals=(Rejected,))


def add_hold_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="execution id")
    parser.add_argument("step", metavar="STEP", help="the step (any step of the playbook)")
    parser.add_argument("--reason", metavar="TEXT", help="why (recorded in step.paused / step.resumed)")
    parser.add_argument("--by", metavar="NAME", help="who (default: your login name)")
    add_connection_arguments(parser, task_queue=False)


def run_hold(args: argparse.Namespace) -> int:
    """``pause-step`` / ``resume-step``: no new run of the step starts until it is resumed."""
    from ..client.answers import hold_step
    from ..client.control import Rejected

    return run_call(args, lambda client: hold_step(client, args.execution_id, args.step,
                                                   hold=args.command == "pause-step", reason=args.reason,
                                                   by=args.by or _login()), refusals=(Rejected,))
