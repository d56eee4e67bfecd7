"""``noetl-temporal approve ID STEP --set k=v ...``: answer a waiting approval (docs/approvals.md).

The same call as the API's ``POST /executions/{id}/steps/{step}/answer``
(``client/answers.py``). Who answers is ``--by`` (default: the login name): the CLI
talks to Temporal directly, and whoever may do that may control every execution, so the
name is declared, not authenticated; the API authenticates it by token.
Exit codes: 0 answered, 1 unknown or finished execution, 2 usage, connection, or an
answer the workflow refused (the reason on stderr).
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from .connection import add_connection_arguments, run_call

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution_id", metavar="ID", help="execution id")
    parser.add_argument("step", metavar="STEP", help="the step whose `kind: approve` task waits (see `status`)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                        help="a field of the answer (VALUE read as YAML: true, 3, prod); repeat for each field")
    parser.add_argument("--set-string", dest="strings", action="append", default=[], metavar="FIELD=VALUE",
                        help="a field taken as text, as written")
    parser.add_argument("--by", metavar="NAME", help="who answers, checked against the task's `approvers` "
                                                     "(default: your login name)")
    parser.add_argument("--iteration", type=int, metavar="N", help="the loop iteration, when several wait")
    parser.add_argument("--reason", metavar="TEXT", help="why (recorded in approval.answered)")
    add_connection_arguments(parser, task_queue=False)


def _login() -> str | None:
    try:
        return getpass.getuser()
    except Exception:   # no login name (a container without one): answer anonymously
        return None


def run(args: argparse.Namespace) -> int:
    from ..client.answers import answer
    from ..client.control import Rejected
    from .run import parse_payload

    async def call(client: Any) -> Any:
        values = parse_payload(None, args.sets, args.strings)
        return await answer(client, args.execution_id, args.step, values, by=args.by or _login(),
                            iteration=args.iteration, reason=args.reason)

    return run_call(args, call, refusals=(Rejected,))
