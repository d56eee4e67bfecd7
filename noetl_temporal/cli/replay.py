"""``noetl-temporal replay``: replay stored histories against the installed version (no server).

    temporal workflow show --workflow-id ID --output json > ID.json
    noetl-temporal replay ID.json ... [--codec acme.codecs:codec]

Run it with the version you are about to deploy, before upgrading workers: a history it
cannot replay is an execution the new workers would fail (docs/deployment.md).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from .connection import add_connection_arguments

__all__ = ["add_replay_arguments", "replay_command"]


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="HISTORY.json",
                        help="workflow histories as `temporal workflow show --output json` writes them")
    # --codec only: replaying needs no server, so no address, namespace or task queue
    add_connection_arguments(parser, task_queue=False, server=False)


def replay_command(args: argparse.Namespace) -> int:
    from ..conversion.converter import configured_data_converter
    from ..errors import NoetlError
    from ..hosting.replay import replay_histories
    from ..store.sealing import CODEC_ENV

    # The SDK logs every failed activation with its stack; each result line already says why.
    logging.getLogger("temporalio").addHandler(logging.NullHandler())
    try:
        # A codec (flag or $NOETL_CODEC) is the workers' converter; without one, ours alone.
        spec = args.codec or os.environ.get(CODEC_ENV) or None
        converter = configured_data_converter(spec) if spec else None
        results = asyncio.run(replay_histories(args.files, data_converter=converter))
    except NoetlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for result in results:
        verdict = "OK" if result.ok else f"FAILED: {result.error}"
        print(f"{result.path}: workflow {result.workflow_id}: {verdict}")
    failed = sum(not r.ok for r in results)
    print(f"{len(results)} history(ies): {len(results) - failed} replayed, {failed} failed", file=sys.stderr)
    return 1 if failed else 0
