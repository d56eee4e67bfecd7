"""``noetl-temporal test``: run playbook test files (docs/testing-playbooks.md).

    noetl-temporal test [PATH ...] [--junit-xml FILE]

Exit codes: 0 every case passed, 1 a case failed, 2 an invalid test file, a path that
does not exist, or no test file found.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["add_test_arguments", "test_command"]


def add_test_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", default=["."],
                        help="test files, or folders searched for *.test.yaml (default: the current folder)")
    parser.add_argument("--junit-xml", metavar="FILE", help="also write the results as JUnit XML, for CI")
    parser.add_argument("--temporal", action="store_true",
                        help="run the cases through the real workflow and task activity on the embedded Temporal "
                             "dev server, on a test clock: backoffs, step timeouts and mocked delays take "
                             "1/36,000 of their time (docs/testing-playbooks.md)")
    parser.add_argument("--record", metavar="PLAYBOOK",
                        help="run PLAYBOOK once with its tools for real and write a case from it (the tools' "
                             "answers as mocks, what the run showed as expectations) to --to; PATHs are not run")
    parser.add_argument("--to", metavar="FILE", help="with --record: the test file to write (must not exist)")
    parser.add_argument("--name", default="recorded run", help="with --record: the case's name")
    parser.add_argument("--payload", metavar="JSON", help="with --record: the run's payload (or @file.json)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="with --record: a payload value, as for `run`; repeatable")
    parser.add_argument("-q", "--quiet", action="store_true", help="print failures and the summary only")


def test_command(args: argparse.Namespace) -> int:
    from ..playtest.session import CaseReport, case_line, discover, print_report, run_files, write_junit

    if args.record:
        return _record(args)
    files, missing = discover(args.paths)
    for name in missing:
        print(f"error: {name}: no such file or folder", file=sys.stderr)
    if missing:
        return 2
    if not files:
        print(f"error: no test files (*.test.yaml) under {' '.join(args.paths)}", file=sys.stderr)
        return 2
    started = time.perf_counter()

    def progress(report: CaseReport) -> None:
        if not args.quiet:
            print(case_line(report), flush=True)

    if args.temporal:
        from ..errors import NoetlError
        from ..playtest.on_temporal import TemporalRunner

        try:
            with TemporalRunner() as runner:
                reports = run_files(files, runner=runner, on_case=progress)
        except NoetlError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    else:
        reports = run_files(files, on_case=progress)
    seconds = time.perf_counter() - started
    _, failed, invalid = print_report(reports, seconds, sys.stdout)
    if args.junit_xml:
        write_junit(reports, args.junit_xml, seconds)
    if invalid:
        return 2
    return 1 if failed else 0


def _record(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..errors import NoetlError, PlaybookInvalid
    from ..playtest.record import record
    from .run import parse_payload

    if not args.to:
        print("error: --record needs --to FILE, the test file to write (e.g. tests/orders.test.yaml)", file=sys.stderr)
        return 2
    if Path(args.to).exists():
        print(f"error: {args.to} exists: --record writes a new test file; choose another name", file=sys.stderr)
        return 2
    try:
        payload = parse_payload(args.payload, args.sets)
        actual, warnings = record(args.record, payload, args.to, args.name)
    except PlaybookInvalid as exc:
        for diag in exc.diagnostics:
            print(diag, file=sys.stderr)
        print(f"error: {args.record} is not a valid playbook; fix the errors above", file=sys.stderr)
        return 2
    except (ValueError, NoetlError, OSError) as exc:
        print(f"error: cannot record {args.record}: {exc}", file=sys.stderr)
        return 2
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {args.to}: case {args.name!r}, the run ended {actual.status} "
          f"({' -> '.join(actual.route)}); run it with: noetl-temporal test {args.to}")
    return 0
