"""``noetl-temporal setup``: prepare a namespace of an existing cluster (idempotent).

    noetl-temporal setup --address temporal:7233 --namespace acme
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..errors import NoetlError
from .connection import add_connection_arguments, connect_to

__all__ = ["add_setup_arguments", "setup_command"]


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser, task_queue=False)


async def _setup(args: argparse.Namespace) -> None:
    from ..client.namespace_setup import register_search_attributes
    from ..workflow.search_attributes import SEARCH_ATTRIBUTES

    target, client = await connect_to(args, needs="setup prepares a namespace of a running Temporal server")
    added = await register_search_attributes(client)
    names = ", ".join(key.name for key in SEARCH_ATTRIBUTES)
    if added:
        print(f"namespace {target.namespace}: registered search attributes {', '.join(added)} "
              f"(all of ours now: {names})")
    else:
        print(f"namespace {target.namespace}: search attributes already registered ({names})")


def setup_command(args: argparse.Namespace) -> int:
    try:
        asyncio.run(_setup(args))
    except NoetlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # an RPC refusal (no permission, no such namespace): said, not a traceback
        print(f"error: cannot register the search attributes: {exc} (fix: check the namespace exists and "
              "that this identity may change it, or register them with `temporal operator search-attribute "
              "create`, docs/deployment.md)", file=sys.stderr)
        return 1
    return 0
