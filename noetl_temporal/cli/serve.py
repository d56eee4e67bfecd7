"""``noetl-temporal api`` and ``noetl-temporal dev``: serve the REST API with uvicorn.

``api`` serves an existing Temporal cluster (``--worker`` adds an in-process worker).
``dev`` is the one-command local setup: the embedded Temporal dev server with its UI, a
worker and the API in one process and one event loop; it prints the three URLs and runs
until Ctrl-C.

Why we bind the listening socket ourselves: a port in use is then a one-line error with
the fix (uvicorn would ``sys.exit`` from inside the event loop), and the bind rule (no
public address without a token) is checked before anything listens.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from typing import Any

from ..errors import ConfigError
from . import hardstop
from .connection import add_catalog_arguments, add_connection_arguments, catalog_of, target_of
from .telemetry import add_telemetry_arguments, apply_telemetry_arguments

__all__ = ["add_api_arguments", "api_command", "add_dev_arguments", "dev_command", "bind_socket"]

EXIT_OK, EXIT_USAGE = 0, 2


def _common(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; any other needs --token or "
                             "--allow-remote-without-token)")
    parser.add_argument("--port", type=int, default=default_port, help=f"API port (default {default_port})")
    parser.add_argument("--token", default=None,
                        help="require 'Authorization: Bearer TOKEN' (default: $NOETL_API_TOKEN; none = no auth)")
    parser.add_argument("--allow-remote-without-token", action="store_true",
                        help="allow a non-loopback --host without a token (trusted networks only)")
    add_catalog_arguments(parser)
    parser.add_argument("--approver", dest="approvers", action="append", default=[], metavar="NAME=TOKEN",
                        help="a token that may answer approvals (and nothing else), as NAME; repeat per approver "
                             "(default: $NOETL_API_APPROVERS, NAME=TOKEN,...; docs/approvals.md)")
    parser.add_argument("--event-store", metavar="URL",
                        help="event store the workers write (SQLite file or postgresql:// URL; default: the "
                             "events of $NOETL_STORE, else ~/.local/share/noetl-temporal/events.db)")
    parser.add_argument("--max-body-bytes", type=int, default=1024 * 1024, metavar="N",
                        help="largest request body accepted (default 1048576); larger ones get 413, as does "
                             "a start request whose playbook and payload expand past twice this once parsed")
    parser.add_argument("--read-timeout", type=float, default=15.0, metavar="SECONDS",
                        help="seconds a client has to send a request's headers, and again its body "
                             "(default 15); a slower one gets 408 and is disconnected")
    parser.add_argument("--heartbeat-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="activity heartbeat timeout (default 10); a cancel reaches a running task "
                             "within about 0.8 x this")
    parser.add_argument("--execution-timeout", type=float, default=None, metavar="SECONDS",
                        help="bound every execution started through the API (default: the playbook's own)")
    add_telemetry_arguments(parser)  # metrics of the in-process worker (dev, api --worker)


def add_api_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser, default_port=8080)
    add_connection_arguments(parser)
    parser.add_argument("--worker", action="store_true",
                        help="also run a worker in this process (otherwise run `noetl-temporal worker`)")


def add_dev_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser, default_port=8080)
    add_connection_arguments(parser, server=False)  # dev starts its own server: only --task-queue
    parser.add_argument("--temporal-port", type=int, default=7233,
                        help="Temporal frontend port (default 7233; a free port if that one is taken)")
    parser.add_argument("--ui-port", type=int, default=8233,
                        help="Temporal UI port (default 8233; a free port if that one is taken)")
    parser.add_argument("--db", metavar="FILE", default=None,
                        help="keep Temporal's state in this SQLite file across restarts (default: in memory)")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or ConfigError saying what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}",
                          fix="pick another --port (0 = any free port) or stop what uses it") from None
    sock.listen(128)
    return sock


def _port_or_free(port: int) -> int:
    from ..client.devserver import free_port

    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return free_port()
    return port


def _settings(args: argparse.Namespace, **kwargs: Any) -> Any:
    from noetl_temporal.api.settings import Settings

    from ..store.event_store import open_event_store

    return Settings(catalog=catalog_of(args), token=args.token,
                    approvers=args.approver_tokens, event_store=open_event_store(args.event_store),
                    max_body_bytes=args.max_body_bytes, read_timeout_s=args.read_timeout,
                    execution_timeout_s=args.execution_timeout,
                    heartbeat_timeout_s=args.heartbeat_timeout, **kwargs)


def _token(args: argparse.Namespace) -> None:
    from noetl_temporal.api.security import parse_approvers

    args.token = args.token or os.environ.get("NOETL_API_TOKEN") or None
    approvers = args.approvers or [i for i in os.environ.get("NOETL_API_APPROVERS", "").split(",") if i.strip()]
    args.approver_tokens = parse_approvers(approvers)   # ConfigError: reported by _run


async def _serve(app: Any, sock: socket.socket, on_started: Any = None) -> None:
    """Run uvicorn on our socket until SIGINT/SIGTERM (uvicorn's handlers end serve())."""
    import uvicorn

    from ..api.serving import uvicorn_config

    server = uvicorn.Server(uvicorn_config(app, read_timeout_s=app.state.settings.read_timeout_s))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.05)
    if server.started and on_started:
        on_started(sock.getsockname()[1])
    stop = asyncio.Event()
    hardstop.install(stop)   # the first signal stops, even with a wedged workflow task
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        server.should_exit = True
        waiter.cancel()
        await task


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


async def _api(args: argparse.Namespace) -> None:
    from noetl_temporal.api.app import create_app

    from ..client.connect import connect
    from ..hosting.lifecycle import hosted_worker

    target = target_of(args)
    if target.address is None:
        raise ConfigError("noetl-temporal api needs a Temporal server",
                          fix="pass --address HOST:PORT (or set TEMPORAL_ADDRESS), or run `noetl-temporal dev` "
                              "for an embedded one")
    sock = bind_socket(args.host, args.port)
    settings = _settings(args, target=target, task_queue=target.task_queue)

    def started(port: int) -> None:
        print(f"API: {_url(args.host, port)} (docs at /docs) -> Temporal {target.address} "
              f"({target.namespace}, task queue {target.task_queue}); catalog: {settings.catalog.describe()}"
              f"{'; auth: bearer token' if args.token else '; auth: off'}", flush=True)

    if not args.worker:
        await _serve(create_app(settings), sock, started)
        return
    client = await connect(target)
    settings.client = client
    async with hosted_worker(client, task_queue=target.task_queue, event_store=settings.event_store):
        await _serve(create_app(settings), sock, started)


async def _dev(args: argparse.Namespace) -> None:
    from noetl_temporal.api.app import create_app

    from ..client.devserver import EmbeddedTemporal
    from ..conversion.converter import configured_data_converter
    from ..hosting.lifecycle import hosted_worker

    target = target_of(args)
    queue = target.task_queue
    sock = bind_socket(args.host, args.port)  # fail fast, before starting Temporal
    embedded = EmbeddedTemporal(ui=True, port=_port_or_free(args.temporal_port),
                                ui_port=_port_or_free(args.ui_port), database=args.db,
                                data_converter=configured_data_converter(target.codec))
    print("starting the Temporal dev server ...", file=sys.stderr, flush=True)
    async with embedded:
        settings = _settings(args, client=embedded.client, task_queue=queue)
        async with hosted_worker(embedded.client, task_queue=queue, event_store=settings.event_store):
            def started(port: int) -> None:
                print(f"Temporal: {embedded.address} (namespace {embedded.namespace}, task queue {queue})")
                print(f"Temporal UI: {embedded.ui_url}")
                print(f"API: {_url(args.host, port)} (docs at /docs)")
                print(f"catalog: {settings.catalog.describe()}; auth: {'bearer token' if args.token else 'off'}; "
                      "Ctrl-C stops everything", flush=True)

            await _serve(create_app(settings), sock, started)
    print("stopped", file=sys.stderr, flush=True)


def _run(main: Any, args: argparse.Namespace) -> int:
    from noetl_temporal.api.security import check_bind

    try:
        _token(args)
        check_bind(args.host, args.token, args.allow_remote_without_token)
        apply_telemetry_arguments(args)
        asyncio.run(main(args))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def api_command(args: argparse.Namespace) -> int:
    return _run(_api, args)


def dev_command(args: argparse.Namespace) -> int:
    return _run(_dev, args)
