"""The Temporal connection flags, defined once for every command that talks to Temporal.

``run``, ``status``/``events``, ``cancel``/``pause``/``resume``/``ctx``, ``schedule ...``, ``worker`` and
``api``/``dev`` all take the same flags with the same meaning; :func:`target_of` turns
them into a :class:`~noetl_temporal.client.connect.Target` the same way for all of them
(flag, else Temporal's environment and config profile, see ``resolve_target``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the client imports temporalio: only when a command runs, not for --help
    from temporalio.client import Client

    from ..client.connect import Target
    from ..store.catalog import Catalog

__all__ = ["add_connection_arguments", "target_of", "connect_to", "CONNECTION_FLAGS", "CATALOG_FLAGS",
           "add_catalog_arguments", "catalog_of", "run_call"]

#: every flag :func:`add_connection_arguments` can add
CONNECTION_FLAGS = ("--address", "--namespace", "--profile", "--task-queue", "--codec")
#: the flags naming the playbook catalog (:func:`add_catalog_arguments`)
CATALOG_FLAGS = ("--catalog-dsn", "--catalog-path")


def add_connection_arguments(parser: argparse.ArgumentParser, *, without_address: str | None = None,
                             task_queue: bool = True, server: bool = True) -> None:
    """Add the connection flags.

    ``without_address``: what the command does when no address is configured (said in
    the help); ``task_queue``: the command starts or serves workflows; ``server``: False
    for a command that starts its own embedded server (``dev``: only ``--task-queue``).
    """
    if server:
        otherwise = f", else {without_address}" if without_address else ""
        parser.add_argument("--address", metavar="HOST:PORT",
                            help="Temporal frontend (default: $TEMPORAL_ADDRESS, then a Temporal config "
                                 f"profile{otherwise})")
        parser.add_argument("--namespace", metavar="NS",
                            help="Temporal namespace (default: $TEMPORAL_NAMESPACE, the profile's, else default)")
        parser.add_argument("--profile", metavar="NAME",
                            help="Temporal config profile to connect with (default: $TEMPORAL_PROFILE)")
    if task_queue:
        parser.add_argument("--task-queue", metavar="Q",
                            help="task queue (default: $NOETL_TASK_QUEUE, else noetl-playbooks)")
    parser.add_argument("--codec", metavar="MODULE:FACTORY",
                        help="your deployment's DataConverter or PayloadCodec (or a function returning one), "
                             "layered under the claim check (default: $NOETL_CODEC; docs/deployment.md)")


def target_of(args: argparse.Namespace) -> Target:
    """Where Temporal is, from the connection flags the command has (absent ones: unset)."""
    import os

    from ..client.connect import resolve_target
    from ..store.sealing import CODEC_ENV

    if getattr(args, "codec", None):
        # --codec is $NOETL_CODEC for this process: the stores a command reads without
        # connecting (``noetl_temporal.store.sealing``) find it there too.
        os.environ[CODEC_ENV] = args.codec
    return resolve_target(getattr(args, "address", None), getattr(args, "namespace", None),
                          getattr(args, "task_queue", None), getattr(args, "profile", None),
                          getattr(args, "codec", None))


async def connect_to(args: argparse.Namespace, *, needs: str) -> tuple[Target, Client]:
    """The target and a connected client; without an address a ConfigError whose message is
    ``needs`` (what the command needs a server for)."""
    from ..client.connect import connect
    from ..errors import ConfigError

    target = target_of(args)
    if target.address is None:
        raise ConfigError(needs, fix="pass --address HOST:PORT (and --namespace) or set TEMPORAL_ADDRESS")
    return target, await connect(target)


def run_call(args: argparse.Namespace, call: Callable[[Client], Awaitable[Any]], *,
             refusals: tuple[type[BaseException], ...] = ()) -> int:
    """One call to a running execution, its answer printed as JSON: exit 0; 2 for a mistake
    on the command line or one of ``refusals`` (the workflow said no); 1 for an unknown
    execution or the server's error, as every control command exits."""
    from ..errors import ConfigError, NoetlError

    async def go() -> Any:
        _, client = await connect_to(args, needs="no Temporal server to talk to")
        return await call(client)

    try:
        print(json.dumps(asyncio.run(go()), indent=2, default=str))
        return 0
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except refusals as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NoetlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def add_catalog_arguments(parser: argparse.ArgumentParser) -> None:
    """The catalog flags, for every command that reads or writes the playbook catalog
    (``api``, ``dev``, ``run``, ``register``, ``catalog``)."""
    parser.add_argument("--catalog-dsn", metavar="DSN",
                        help="PostgreSQL DSN for the catalog (default: $NOETL_CATALOG_DSN, else SQLite)")
    parser.add_argument("--catalog-path", metavar="FILE",
                        help="SQLite catalog file (default: $NOETL_CATALOG_PATH or "
                             "~/.local/share/noetl-temporal/catalog.db)")


def catalog_of(args: argparse.Namespace, *, export: bool = False) -> Catalog:
    """The catalog the catalog flags name (flag, else environment, else the default file).

    ``export``: also make the flags this process's ``NOETL_CATALOG_DSN``/``NOETL_CATALOG_PATH``,
    so the in-process worker of a ``run`` resolves sub-playbooks in the same catalog."""
    import os

    from ..store.catalog import Catalog

    dsn, path = getattr(args, "catalog_dsn", None), getattr(args, "catalog_path", None)
    catalog = Catalog.from_config(dsn, path)
    if export:
        for name, value in (("NOETL_CATALOG_DSN", dsn), ("NOETL_CATALOG_PATH", path)):
            if value:
                os.environ[name] = value
    return catalog
