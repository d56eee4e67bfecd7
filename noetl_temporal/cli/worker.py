"""Run a noetl-temporal worker against a Temporal cluster until interrupted.

    noetl-temporal worker --address 127.0.0.1:7233 --task-queue noetl-playbooks

Scale out by starting more of these, on more machines, against the same cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from noetl_temporal.cli import hardstop
from noetl_temporal.cli.connection import add_connection_arguments, connect_to
from noetl_temporal.cli.telemetry import add_telemetry_arguments, apply_telemetry_arguments
from noetl_temporal.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="noetl-temporal worker",
                                     description="Serve playbook workflows and tool activities.")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--max-concurrent-activities", type=int, default=100, metavar="N",
                        help="tool tasks this worker runs at once (default: 100)")
    parser.add_argument("--workflow-sandbox", action="store_true", default=None,
                        help="run playbook workflows in the Temporal SDK's workflow sandbox (default: "
                             "unsandboxed, unless $NOETL_WORKFLOW_SANDBOX=1; see docs/deployment.md)")
    add_telemetry_arguments(parser)


async def serve(args: argparse.Namespace) -> None:
    # imported here: every command's parser is built at start, and the worker's machinery
    # (the Temporal SDK, every tool) cost `validate` a second of CPU before its first line
    from noetl_temporal.hosting.lifecycle import hosted_worker

    target, client = await connect_to(args, needs="a worker needs a Temporal server to poll")
    stop = asyncio.Event()
    hardstop.install(stop)   # the first signal stops, even with a wedged workflow task
    metrics = f"; metrics at http://{args.metrics_host}:{args.metrics_port}/metrics" if args.metrics_port else ""
    async with hosted_worker(client, task_queue=target.task_queue,
                             max_concurrent_activities=args.max_concurrent_activities,
                             sandboxed=args.workflow_sandbox):
        print(f"worker polling {target.task_queue} on {target.address} ({target.namespace}){metrics}",
              file=sys.stderr, flush=True)
        await stop.wait()


def run(args: argparse.Namespace) -> int:
    try:
        apply_telemetry_arguments(args)
        asyncio.run(serve(args))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
