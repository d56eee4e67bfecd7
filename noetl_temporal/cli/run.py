"""``noetl-temporal run``: run one playbook and report.

Exit codes: 0 COMPLETED (or a valid playbook with ``--dry-run``), 1 FAILED or CANCELLED, 2 invalid
playbook or usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from ..engine.payload_size import PAYLOAD_FIX, payload_refusal
from ..errors import ConfigError, NoetlError, NotFound, PlaybookInvalid
from .connection import add_catalog_arguments, add_connection_arguments, catalog_of, target_of

__all__ = ["add_run_arguments", "run_command", "parse_payload", "started_lines", "afterwards_line"]

EXIT_COMPLETED, EXIT_FAILED, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130

# Events ``--json`` carries at most: the first of the log. A 10,000-step run logs 400,000
# events (tens of MB); ``noetl-temporal events ID --after-seq N`` pages through the rest.
JSON_EVENTS_MAX = 1_000


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("playbook", metavar="PLAYBOOK",
                        help="playbook YAML file, or a catalog entry as NoETL names it: catalog://PATH[@N], or "
                             "a catalog path (a leading '/' is the catalog root: /team/daily) when no such "
                             "file exists")
    parser.add_argument("--target", "-t", metavar="STEP",
                        help="start at this step instead of the playbook's entry step (NoETL's --target)")
    parser.add_argument("--input", "-i", dest="input_file", metavar="FILE",
                        help="a JSON file with a payload object (NoETL's --input); --payload and --set "
                             "apply over it")
    parser.add_argument("--version", "-V", dest="catalog_version", type=int, metavar="N",
                        help="with a catalog reference: run version N (default: the latest, or PATH@N)")
    parser.add_argument("--payload", metavar="JSON",
                        help="request payload deep-merged over the workload: a JSON object, or @FILE "
                             "(at most 2,000,000 characters or items: pass big data by reference)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="set one payload value (dotted keys nest; VALUE is read as YAML, "
                             "so 3 is a number and true a boolean); repeatable. NoETL's CLI differs: "
                             "docs/migrating-from-noetl.md")
    parser.add_argument("--set-string", dest="set_strings", action="append", default=[], metavar="KEY=VALUE",
                        help="as --set, but VALUE stays the string written (NoETL's --set gives strings: "
                             "true is 'true'); applied after --set; repeatable")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (execution_id, workflow_id, state, ctx, steps, "
                             f"summary, error, event_count, events_truncated, events: the first "
                             f"{JSON_EVENTS_MAX:,} events; read the rest with `noetl-temporal events ID "
                             "--after-seq N`) on stdout")
    add_connection_arguments(parser, without_address="an embedded dev server started for this run")
    parser.add_argument("--no-worker", action="store_true",
                        help="with --address: do not start an in-process worker (your workers serve the queue)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="progress lines for every event, with its payload on one line (NoETL's -v)")
    add_catalog_arguments(parser)
    parser.add_argument("--strict", action="store_true",
                        help="a task template that renders an undefined value fails the task (as the "
                             "playbook setting executor.spec.strict_templates: true); without it the "
                             "value renders empty and the progress shows a located warning")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate and print the plan (steps, arcs, what runs first; JSON with --json); "
                             "run nothing and connect to nothing. A refused `kind: container` task "
                             "(NTL338) prints the Kubernetes Job NoETL would submit for it")


def parse_payload(payload: str | None, sets: Sequence[str], strings: Sequence[str] = (),
                  input_file: str | None = None) -> dict[str, Any]:
    """The request payload from ``--input`` (``input_file``), ``--payload``, ``--set`` and
    ``--set-string`` (``strings``), each applied over the one before; raises ValueError with the fix."""
    data: dict[str, Any] = {}
    if input_file:
        data = _json_object(f"@{input_file}", "--input")
    if payload:
        data = _deep_merge(data, _json_object(payload, "--payload"))
    for flag, items in (("--set", sets), ("--set-string", strings)):
        for item in items:
            key, sep, raw = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"{flag} {item!r}: expected KEY=VALUE, e.g. {flag} name=ada")
            _put(data, key.strip().split("."), raw if flag == "--set-string" else _yaml_value(raw))
    refused = payload_refusal(data, "--payload/--set")
    if refused is not None:
        raise ValueError(f"{refused} (fix: {PAYLOAD_FIX})")
    return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else value
    return out


def _json_object(payload: str, flag: str) -> dict[str, Any]:
    """A JSON object given inline or as @FILE; ValueError naming ``flag`` and the fix."""
    data: Any = {}
    if payload:
        text = payload
        if payload.startswith("@"):
            try:
                with open(payload[1:], encoding="utf-8") as fh:
                    text = fh.read()
            except OSError as exc:
                shown = payload if flag == "--payload" else payload[1:]
                raise ValueError(f"{flag} {shown}: cannot read file: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{flag} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                             f"{exc.msg}); pass an object such as '{{\"n\": 3}}'") from None
        if not isinstance(data, dict):
            raise ValueError(f"{flag} must be a JSON object such as '{{\"n\": 3}}'")
    return data


def _yaml_value(raw: str) -> Any:
    try:
        return yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        return raw


def _put(data: dict[str, Any], parts: list[str], value: Any) -> None:
    """Set a dotted key: each part but the last is a mapping (created, or replacing a scalar)."""
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def run_command(args: argparse.Namespace) -> int:
    from ..client.end_to_end import ProgressPrinter, run_playbook
    try:
        payload = parse_payload(args.payload, args.sets, args.set_strings, args.input_file)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        loaded, source = load_reference(args)
    except PlaybookInvalid as exc:
        for diag in exc.diagnostics:
            print(diag, file=sys.stderr)
        if args.dry_run:
            _print_container_jobs(args.playbook, exc.diagnostics)
        print(f"error: {args.playbook} is not a valid playbook; nothing was run", file=sys.stderr)
        return EXIT_INVALID
    except (ConfigError, NotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if args.target is not None:
        names = [s.step for s in loaded.playbook.workflow]
        if args.target not in names:
            print(f"error: --target {args.target!r} is not a step of {args.playbook} (steps: "
                  f"{', '.join(names[:20])}{' ...' if len(names) > 20 else ''}); nothing was run", file=sys.stderr)
            return EXIT_INVALID
        loaded.playbook.executor.spec.entry_step = args.target
    for warning in loaded.warnings:
        if not args.quiet:
            print(warning, file=sys.stderr)
    if args.dry_run:
        return _dry_run(loaded, args.json)
    try:
        target = target_of(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID

    ui: list[str] = []

    def on_ready(ui_url: str | None) -> None:
        ui.extend([ui_url] if ui_url else [])
        if args.quiet:
            return
        where = "embedded Temporal dev server" if target.address is None else f"Temporal at {target.address}"
        print(f"running {args.playbook} on {where}", file=sys.stderr)
        if ui_url:
            print(f"Temporal UI: {ui_url} (available while this run lasts)", file=sys.stderr)

    if args.strict:
        loaded.playbook.executor.spec.strict_templates = True

    started: list[str] = []
    embedded = target.address is None

    def on_start(execution_id: str, address: str | None) -> None:
        started.append(execution_id)
        # Printed even with --quiet: it is what another terminal needs to control the run.
        print(started_lines(execution_id, address, target.namespace, ui[0] if ui else None, embedded=embedded),
              file=sys.stderr, flush=True)

    def afterwards() -> None:
        # The embedded server has stopped with the run: only the event store answers now.
        if embedded and started and not args.quiet:
            print(afterwards_line(started[0]), file=sys.stderr)

    printer = None if args.quiet else ProgressPrinter(sys.stderr, locate=_locator(loaded), verbose=args.verbose)
    try:
        report = asyncio.run(run_playbook(loaded.playbook, target=target, payload=payload,
                                          source=source, worker=not args.no_worker,
                                          on_event=printer, on_ready=on_ready, on_start=on_start,
                                          events_limit=JSON_EVENTS_MAX if args.json else 0))
    except KeyboardInterrupt:
        print("interrupted: the execution was asked to cancel", file=sys.stderr)
        afterwards()
        return EXIT_INTERRUPTED
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except NoetlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    _locate_errors(loaded, report)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        _print_human(report)
    afterwards()
    return EXIT_COMPLETED if report.state == "COMPLETED" else EXIT_FAILED


def load_reference(args: argparse.Namespace) -> tuple[Any, str]:
    """The playbook ``run`` names, and the source its execution records.

    A file when one exists (or the name ends in .yaml/.yml); otherwise NoETL's catalog
    references: ``catalog://PATH[@N]``, a catalog path with or without NoETL's leading ``/``.
    A catalog run's source is ``catalog:PATH@N``, so its sub-playbooks are looked up next to
    it in the catalog, as the API's starts by reference do. The catalog flags become this
    process's catalog settings either way, for the in-process worker's sub-playbooks."""
    import os

    from ..dsl import load_playbook, load_playbook_text
    from .catalog import split_reference

    reference = args.playbook
    is_file = os.path.exists(reference) or reference.endswith((".yaml", ".yml"))
    if is_file and not reference.startswith("catalog://"):
        if args.catalog_version is not None:
            raise ConfigError(f"--version {args.catalog_version} names a catalog version, but {reference} is a file",
                              fix="drop --version, or name the catalog entry (catalog://PATH)")
        if args.catalog_dsn or args.catalog_path:
            catalog_of(args, export=True)   # its sub-playbooks may come from that catalog
        return load_playbook(reference), reference
    catalog = catalog_of(args, export=True)
    path, version = split_reference(reference)
    version = args.catalog_version if args.catalog_version is not None else version
    try:
        entry = catalog.get_entry(path, version)
    except NotFound as exc:
        raise NotFound(f"{reference!r} is no file, and {exc.message} ({catalog.describe()})",
                       fix="give the playbook's file, register it (`noetl-temporal register FILE`), or name "
                           "the catalog with --catalog-path/--catalog-dsn") from None
    source = f"catalog:{entry['path']}@{entry['version']}"
    return load_playbook_text(entry["content"], source=source), source


def _locator(loaded: Any) -> Callable[[str], str]:
    from .locations import locate_message

    return lambda message: locate_message(loaded, message) or message


def _print_container_jobs(playbook: str, diagnostics: Sequence[Any]) -> None:
    """With ``--dry-run``: the Kubernetes Job NoETL would submit for each refused ``kind:
    container`` task (NTL338), on stdout as YAML documents (docs/noetl-e2e-fates.md)."""
    from pathlib import Path

    from ..dsl.container_job import container_tasks, job_spec

    paths = [d.path for d in diagnostics if d.code == "NTL338" and d.path]
    if not paths or not Path(playbook).is_file():
        return
    try:
        doc = yaml.safe_load(Path(playbook).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return
    name = str((doc.get("metadata") or {}).get("name") or "") if isinstance(doc, dict) else ""
    for step, label, task in container_tasks(doc, paths):
        print("---")
        print(f"# the Kubernetes Job NoETL would submit for step {step!r}, task {label!r} "
              f"(templates render when it is submitted)")
        print(yaml.safe_dump(job_spec(task, step=step, label=label, playbook=name), sort_keys=False), end="")


def _dry_run(loaded: Any, as_json: bool) -> int:
    from ..graphview.model import graph_view
    from ..graphview.plan import plan, plan_text

    view = graph_view(loaded.playbook)
    print(json.dumps(plan(view), indent=2) if as_json else plan_text(view), end="\n" if as_json else "")
    return EXIT_COMPLETED


def started_lines(execution_id: str, address: str | None, namespace: str, ui_url: str | None, *,
                  embedded: bool = False) -> str:
    """What ``run`` prints when the execution starts: its id, how to control it, its UI page.
    An embedded server's address works only while the run lasts, and the hint says so."""
    flags = f" --address {address}" if address else ""
    if namespace != "default":
        flags += f" --namespace {namespace}"
    lasts = " (while this run lasts)" if embedded else ""
    lines = [f"execution {execution_id} started",
             f"  control it: noetl-temporal status|events|ctx|pause|resume|cancel {execution_id}{flags}{lasts}"]
    if ui_url:
        lines.append(f"  Temporal UI: {ui_url.rstrip('/')}/namespaces/{namespace}/workflows/{execution_id}")
    return "\n".join(lines)


def afterwards_line(execution_id: str) -> str:
    """What ``run`` on an embedded server prints at the end: the commands that still work, read
    from the event store (``status``/``events`` without an address), the server being gone."""
    return f"read it later: noetl-temporal status|events {execution_id} (from the event store)"


def _locate_errors(loaded: Any, report: Any) -> None:
    """Runtime errors that name a place in the playbook get its file:line:col."""
    from .locations import locate_message

    report.error = locate_message(loaded, report.error)
    for failed in (report.summary or {}).get("failed_steps") or []:
        failed["message"] = locate_message(loaded, failed.get("message"))


def _print_human(report: Any) -> None:
    print(f"execution {report.execution_id}: {report.state}")
    for name, info in report.steps.items():
        result = json.dumps(info.get("result"), default=str)
        if len(result) > 120:
            result = result[:117] + "..."
        print(f"  {name:<24} {info.get('status'):<10} runs={info.get('runs')}  {result}")
    if report.error:
        print(f"error: {report.error}")
    if report.ctx:
        print(f"ctx: {json.dumps(report.ctx, default=str)[:400]}")
