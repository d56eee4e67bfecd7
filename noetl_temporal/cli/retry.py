"""``noetl-temporal retry-now ID STEP`` and ``set-retry ID STEP --attempts N --delay S``:
act on the retries of one running step (docs/approvals.md, "Retrying a step now").

Same calls as ``POST /executions/{id}/steps/{step}/retry-now`` and ``.../retry-policy``.
Exit codes: 0 done, 1 unknown or finished execution, 2 usage, connection, or a control
the workflow refused (the reason on stderr).
"""

from __future__ import annotations

import argparse
from typing import Any

from .approve import _login
from .connection import add_connection_arguments, run_call

__all__ = ["add_now_arguments", "run_now", "add_policy_arguments", "run_policy"]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="execution id")
    parser.add_argument("step", metavar="STEP", help="the running step")
    parser.add_argument("--reason", metavar="TEXT", help="why (recorded in the event)")
    parser.add_argument("--iteration", type=int, metavar="N", help="the loop iteration (loop steps)")
    parser.add_argument("--by", metavar="NAME", help="who (default: your login name)")
    add_connection_arguments(parser, task_queue=False)


def add_now_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser)


def run_now(args: argparse.Namespace) -> int:
    from ..client.control import Rejected
    from ..client.step_retries import retry_now

    async def call(client: Any) -> Any:
        return await retry_now(client, args.execution_id, args.step, reason=args.reason, by=args.by or _login(),
                               iteration=args.iteration)

    return run_call(args, call, refusals=(Rejected,))


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--attempts", type=int, metavar="N",
                        help="attempts in all, the ones made so far included (default: keep the current cap: "
                             "Temporal's, or the rule's on the fast path)")
    parser.add_argument("--delay", type=float, metavar="SECONDS",
                        help="seconds between attempts, the wait under way included (default: keep the current)")


def run_policy(args: argparse.Namespace) -> int:
    from ..client.control import Rejected
    from ..client.step_retries import set_retry

    async def call(client: Any) -> Any:
        return await set_retry(client, args.execution_id, args.step, attempts=args.attempts, delay=args.delay,
                               reason=args.reason, by=args.by or _login(), iteration=args.iteration)

    return run_call(args, call, refusals=(Rejected,))
