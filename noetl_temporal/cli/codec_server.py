"""``noetl-temporal codec-server``: serve the deployment's codec to the Temporal UI and CLI.

    noetl-temporal codec-server --codec acme.codecs:codec --port 8081
    temporal workflow show -w ID --codec-endpoint http://127.0.0.1:8081
    temporal server start-dev --ui-codec-endpoint http://127.0.0.1:8081

The codec is loaded as every command's ``--codec`` is (``converter.configured_data_converter``),
and the claim check is layered over it as on the workers, so large payloads stored by
reference are read back too (docs/deployment.md, "A readable UI: the codec server").
"""

from __future__ import annotations

import argparse
import os
import sys

from .connection import add_connection_arguments

__all__ = ["add_codec_server_arguments", "codec_server_command"]

DEFAULT_PORT = 8081


def add_codec_server_arguments(parser: argparse.ArgumentParser) -> None:
    from ..api.codec_server import DEFAULT_UI_ORIGINS

    # --codec only: the server decodes and encodes, it never connects to Temporal
    add_connection_arguments(parser, task_queue=False, server=False)
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1; 0.0.0.0 for every interface: "
                             "anyone who reaches it can decrypt, so put it behind your auth)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--cors-origin", dest="cors_origins", action="extend", nargs="+", metavar="ORIGIN",
                        help="an origin of a Temporal UI that may call it from a browser, e.g. "
                             "https://temporal.example.com (repeatable; '*' any, without credentials; "
                             f"default: the dev server's UI, {' and '.join(DEFAULT_UI_ORIGINS)})")
    parser.add_argument("--only-namespace", dest="namespaces", action="append", metavar="NS",
                        help="serve only this namespace (the X-Namespace header the UI and CLI send; "
                             "repeatable; default: any)")
    parser.add_argument("--payload-store", metavar="DIR|URL",
                        help="where the claim check keeps large payloads, as the workers': a directory, "
                             "file:// or postgresql:// URL (default: the payloads of $NOETL_STORE, else "
                             "the local data directory)")


def codec_server_command(args: argparse.Namespace) -> int:
    from ..api.codec_server import DEFAULT_UI_ORIGINS, codec_app
    from ..api.serving import uvicorn_config
    from ..conversion.converter import configured_data_converter, users_codec
    from ..errors import NoetlError
    from ..store.blobs import set_payload_location
    from ..store.sealing import CODEC_ENV

    set_payload_location(args.payload_store)
    spec = args.codec or os.environ.get(CODEC_ENV) or None
    try:
        converter = configured_data_converter(spec)
    except NoetlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    codec = converter.payload_codec
    assert codec is not None   # ours: the claim check at least
    origins = args.cors_origins or list(DEFAULT_UI_ORIGINS)
    app = codec_app(codec, cors_origins=origins, namespaces=args.namespaces or ())
    import uvicorn

    server = uvicorn.Server(uvicorn_config(app, host=args.host, port=args.port))
    mine = f"your codec {spec}" if users_codec(converter) is not None and spec \
        else "no codec of yours: claim-check references only"
    print(f"codec server on http://{args.host}:{args.port} ({mine}); CORS for {', '.join(origins)}",
          file=sys.stderr, flush=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    except SystemExit:   # uvicorn exits when it cannot listen (the port is taken); it said why
        print(f"error: cannot listen on {args.host}:{args.port} (fix: choose another --port or --host)",
              file=sys.stderr)
        return 2
    return 0
