"""``noetl-temporal register FILE...`` and ``noetl-temporal catalog list|show|register``.

The playbook catalog from the command line, as NoETL users keep it (``noetl register
playbook``, ``noetl catalog register|list|get``), through the same store the API's
``POST /catalog`` writes (``store/catalog.py``): one validation, one version rule. The
catalog is the one the catalog flags name (``cli/connection.py``), the file or database
``api``, ``dev``, ``run`` and the workers read.

Exit codes: 0 ok, 2 a file that is not a valid playbook (the others are still registered),
a path that is not in the catalog, or a catalog that cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ConfigError, NotFound, PlaybookInvalid
from .connection import add_catalog_arguments, catalog_of

__all__ = ["add_register_arguments", "register_command", "add_catalog_command_arguments", "catalog_command"]

EXIT_OK, EXIT_INVALID = 0, 2

#: NoETL's resource types for ``catalog list``; only playbooks live in this catalog
_PLAYBOOK_TYPES = ("playbook", "playbooks")


def add_register_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="playbook YAML files; each is validated and stored under its metadata.path "
                             "(else metadata.name) as the next version ('-' reads standard input)")
    parser.add_argument("--json", action="store_true",
                        help="print [{file, path, version, created, sha256, created_at} or {file, errors}] "
                             "as JSON")
    add_catalog_arguments(parser)


def add_catalog_command_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="catalog_action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="the registered playbooks: path, latest version, versions, updated",
                             description="the registered playbooks: path, latest version, number of "
                                         "versions, when the latest was registered")
    listing.add_argument("resource_type", nargs="?", default="Playbook", metavar="TYPE",
                         help="NoETL's resource type; only Playbook (the default) is kept here")
    listing.add_argument("--json", "-j", action="store_true", help="print the list as JSON")
    add_catalog_arguments(listing)
    for name, aliases in (("show", ["get"]),):
        show = sub.add_parser(name, aliases=aliases,
                              help="print a registered playbook's YAML (the latest version, or --version N)",
                              description="print a registered playbook's YAML (the latest version, or "
                                          "--version N); `get` is NoETL's name for it")
        show.add_argument("path", metavar="PATH",
                          help="catalog path (NoETL's leading '/' and catalog:// are accepted; PATH@N "
                               "names a version)")
        show.add_argument("--version", "-V", type=int, metavar="N", help="that version (default: the latest)")
        show.add_argument("--json", "-j", action="store_true",
                          help="print {path, version, content, sha256, created_at, versions} as JSON")
        add_catalog_arguments(show)
    register = sub.add_parser("register", help="the same as `noetl-temporal register FILE...`",
                              description="validate and store playbooks: the same as "
                                          "`noetl-temporal register FILE...` (NoETL's `catalog register`)")
    add_register_arguments(register)


def register_command(args: argparse.Namespace) -> int:
    try:
        catalog = catalog_of(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    reports: list[dict[str, Any]] = []
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else _read(name)
            source = "<stdin>" if name == "-" else name
            reports.append({"file": name, **catalog.register(text, source=source)})
        except PlaybookInvalid as exc:
            reports.append({"file": name, "errors": exc.diagnostics})
        except (OSError, ConfigError) as exc:
            reports.append({"file": name, "errors": [f"{name}: {exc}"]})
    if args.json:
        print(json.dumps([{**r, "errors": [_diag_json(d) for d in r["errors"]]} if "errors" in r else r
                          for r in reports], indent=2))
    for report in reports:
        if "errors" in report:
            for diag in report["errors"]:
                print(diag, file=sys.stderr)
            print(f"error: {report['file']} was not registered; fix the errors above", file=sys.stderr)
        elif not args.json:
            state = "registered" if report["created"] else "unchanged, already"
            print(f"{report['file']}: {state} {report['path']} version {report['version']}")
    failed = sum(1 for r in reports if "errors" in r)
    if not args.json and len(reports) > 1:
        print(f"{len(reports)} file(s): {len(reports) - failed} registered, {failed} refused "
              f"(catalog: {catalog.describe()})", file=sys.stderr)
    return EXIT_INVALID if failed else EXIT_OK


def catalog_command(args: argparse.Namespace) -> int:
    if args.catalog_action == "register":
        return register_command(args)
    try:
        catalog = catalog_of(args)
        if args.catalog_action == "list":
            return _list(catalog, args)
        return _show(catalog, args)
    except (ConfigError, NotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID


def _list(catalog: Any, args: argparse.Namespace) -> int:
    if args.resource_type.lower() not in _PLAYBOOK_TYPES:
        print(f"error: this catalog keeps playbooks only, not {args.resource_type!r}; credentials are keychain "
              "entries of the worker that runs the task (docs/keychain.md); use `catalog list Playbook`",
              file=sys.stderr)
        return EXIT_INVALID
    items = catalog.list()
    if args.json:
        print(json.dumps(items, indent=2))
        return EXIT_OK
    if not items:
        print(f"no playbooks registered in {catalog.describe()}", file=sys.stderr)
        return EXIT_OK
    width = max(len("PATH"), *(len(i["path"]) for i in items))
    print(f"{'PATH':<{width}}  LATEST  VERSIONS  UPDATED")
    for item in items:
        print(f"{item['path']:<{width}}  {item['latest_version']:>6}  {item['versions']:>8}  {item['updated_at']}")
    return EXIT_OK


def _show(catalog: Any, args: argparse.Namespace) -> int:
    path, version = split_reference(args.path)
    version = args.version if args.version is not None else version
    entry = catalog.get_entry(path, version)
    if args.json:
        print(json.dumps({**entry, "versions": catalog.versions(entry["path"])}, indent=2))
    else:
        sys.stdout.write(entry["content"] if entry["content"].endswith("\n") else entry["content"] + "\n")
        print(f"{entry['path']} version {entry['version']} (registered {entry['created_at']})", file=sys.stderr)
    return EXIT_OK


def split_reference(reference: str) -> tuple[str, int | None]:
    """``catalog://path@N``, ``/path`` or ``path`` -> ``(path, N or None)``: NoETL's ways of
    naming a catalog entry. The leading ``/`` is kept here; the catalog drops it
    (``store/catalog_paths.canonical_path``)."""
    path = reference.removeprefix("catalog://")
    base, at, tail = path.rpartition("@")
    if at and tail.isdigit():
        return base, int(tail)
    return path, None


def _read(name: str) -> str:
    with open(name, encoding="utf-8") as fh:
        return fh.read()


def _diag_json(diag: Any) -> Any:
    return diag.to_dict() if hasattr(diag, "to_dict") else {"message": str(diag)}
