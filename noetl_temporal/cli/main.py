"""The ``noetl-temporal`` command line.

Each subcommand is one entry of :data:`COMMANDS`: a name, a one-line help, a function
that adds its arguments and a function that runs it and returns the exit code. To add
a command (``run``, ``status``, ``events``, ``api``, ``dev`` ...), write those two
functions (in their own module when they are more than a few lines) and append an
entry; :func:`build_parser` wires it up. Heavy imports happen inside the run
functions so ``--help`` and unrelated commands stay fast.

Exit codes: 0 success, 2 invalid input (a playbook that does not validate, or a
command-line usage error, as argparse does), 141 the reader of the output closed it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["COMMANDS", "Command", "build_parser", "main"]

EXIT_OK = 0
EXIT_INVALID = 2


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ------------------------------------------------------------------ validate

def _validate_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="playbook YAML files to check ('-' reads standard input)")
    parser.add_argument("--json", action="store_true",
                        help="print [{file, valid, errors, warnings}] as JSON instead of text")


def _validate(args: argparse.Namespace) -> int:
    from ..dsl import validate_file, validate_text

    if _EXITS_WITHOUT_CLEANUP:
        from ..dsl.loader import keep_until_exit
        keep_until_exit()   # os._exit frees what validation loaded: no need to free it first
    reports = []
    for name in args.files:
        diags = validate_text(sys.stdin.read(), "<stdin>") if name == "-" else validate_file(name)
        errors = [d for d in diags if d.is_error]
        warnings = [d for d in diags if not d.is_error]
        reports.append({"file": name, "valid": not errors, "errors": errors, "warnings": warnings})
    if args.json:
        out = [{**r, "errors": [d.to_dict() for d in r["errors"]],
                "warnings": [d.to_dict() for d in r["warnings"]]} for r in reports]
        print(json.dumps(out, indent=2))
    else:
        for section in ("errors", "warnings"):
            for report in reports:
                for diag in report[section]:
                    print(diag)
        invalid = sum(1 for r in reports if not r["valid"])
        n_err = sum(len(r["errors"]) for r in reports)
        n_warn = sum(len(r["warnings"]) for r in reports)
        print(f"{len(reports)} file(s): {len(reports) - invalid} valid, {invalid} invalid "
              f"({n_err} error(s), {n_warn} warning(s))", file=sys.stderr)
    return EXIT_OK if all(r["valid"] for r in reports) else EXIT_INVALID


# ------------------------------------------------------------------ lazily imported commands

# perf: importing every command's module (the SDK, the engine) at start-up (0.3 -> 0.2 s of `validate`) — benchmark: probes.validate_speed
def _lazy(module: str, name: str) -> Callable:
    """Import a command's module only when that command is used (keeps --help fast)."""

    def call(arg):
        import importlib

        mod = importlib.import_module(f"{__package__}.{module}")
        return getattr(mod, name)(arg)

    return call


# ------------------------------------------------------------------ schema

def _schema_args(parser: argparse.ArgumentParser) -> None:
    pass


def _schema(args: argparse.Namespace) -> int:
    from ..dsl import playbook_json_schema

    print(json.dumps(playbook_json_schema(), indent=2))
    return EXIT_OK


# ------------------------------------------------------------------ graph

def _graph_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="playbook YAML file ('-' reads standard input)")


def _graph(args: argparse.Namespace) -> int:
    from ..dsl import load_playbook, load_playbook_text
    from ..errors import PlaybookInvalid
    from ..graphview import graph_view, to_mermaid

    try:
        loaded = (load_playbook_text(sys.stdin.read(), "<stdin>") if args.file == "-"
                  else load_playbook(args.file))
    except PlaybookInvalid as exc:
        for diag in exc.diagnostics:
            print(diag, file=sys.stderr)
        print(f"error: {args.file} is not a valid playbook; fix the errors above (see "
              f"`noetl-temporal validate`)", file=sys.stderr)
        return EXIT_INVALID
    sys.stdout.write(to_mermaid(graph_view(loaded.playbook)))
    return EXIT_OK


COMMANDS: list[Command] = [
    Command("validate", "check playbook files: every error, then every warning, one per line as "
                        "file:line:col: CODE message (path) — fix (stdout), a summary on stderr; "
                        "exit 2 if any file is invalid", _validate_args, _validate),
    Command("schema", "print the JSON Schema (Draft 2020-12) of the playbook source format",
            _schema_args, _schema),
    Command("graph", "print the playbook's step graph as a Mermaid flowchart (steps, arcs with their when, "
                     "router modes, loops, joins, entry, final step); exit 2 if the playbook is invalid",
            _graph_args, _graph),
    Command("run", "run a playbook as a Temporal workflow (embedded dev server unless an address is "
                   "configured); exit 0 COMPLETED, 1 FAILED/CANCELLED, 2 invalid, 130 interrupted",
            _lazy("run", "add_run_arguments"), _lazy("run", "run_command")),
    Command("status", "print an execution's status: exactly execution_id, state, current_step, started_at, "
                      "ended_at, terminal_event, completion_inferred, workers_polling (warns when no "
                      "worker polls); a redrive adds redriven_from, reused_steps, rerun_steps",
            _lazy("observe", "add_status_arguments"), _lazy("observe", "status_command")),
    Command("events", "print an execution's canonical events (filters: --type, --entity, --after-seq; "
                      "--follow to stream)",
            _lazy("observe", "add_events_arguments"), _lazy("observe", "events_command")),
    Command("cancel", "cancel a running execution (its tasks and, unless --no-cascade, its sub-playbooks)",
            _lazy("control", "add_cancel_arguments"), _lazy("control", "control_command")),
    Command("pause", "pause an execution: no new steps start, running tasks finish",
            _lazy("control", "add_pause_arguments"), _lazy("control", "control_command")),
    Command("resume", "resume a paused execution",
            _lazy("control", "add_resume_arguments"), _lazy("control", "control_command")),
    Command("ctx", "patch a running execution's ctx (KEY=VALUE...); re-evaluates steps waiting for admission",
            _lazy("control", "add_ctx_arguments"), _lazy("control", "control_command")),
    Command("approve", "answer a step waiting for a person (`kind: approve`): --set FIELD=VALUE..., --by NAME",
            _lazy("approve", "add_arguments"), _lazy("approve", "run")),
    Command("skip", "skip a running step: its task is cancelled, the step ends SKIPPED with --result and "
                    "its arcs fire as for a success (--reason required)",
            _lazy("skip", "add_arguments"), _lazy("skip", "run")),
    Command("pause-step", "pause one step of a running execution: no new run of it starts, the rest goes on",
            _lazy("skip", "add_hold_arguments"), _lazy("skip", "run_hold")),
    Command("resume-step", "resume a step paused with pause-step: its waiting runs start",
            _lazy("skip", "add_hold_arguments"), _lazy("skip", "run_hold")),
    Command("retry-now", "make a step that waits to retry start its next attempt now (skips the backoff)",
            _lazy("retry", "add_now_arguments"), _lazy("retry", "run_now")),
    Command("set-retry", "change the retry policy of a running step's task: --attempts N (in all), --delay SECONDS",
            _lazy("retry", "add_policy_arguments"), _lazy("retry", "run_policy")),
    Command("redrive", "start a new execution from a FAILED or CANCELLED one: reuse the results of the steps it "
                       "completed, rerun the rest (--from STEP, --playbook FILE | --latest); docs/operations.md",
            _lazy("redrive", "add_arguments"), _lazy("redrive", "run")),
    Command("worker", "serve playbook workflows and tool activities on a Temporal cluster until stopped",
            _lazy("worker", "add_arguments"), _lazy("worker", "run")),
    Command("api", "serve the REST API (FastAPI on uvicorn) for an existing Temporal cluster; docs at /docs",
            _lazy("serve", "add_api_arguments"), _lazy("serve", "api_command")),
    Command("setup", "prepare a namespace of an existing cluster: register our search attributes "
                     "(idempotent: only the missing ones)",
            _lazy("setup", "add_setup_arguments"), _lazy("setup", "setup_command")),
    Command("schedule", "playbook schedules as Temporal Schedules: create (--cron/--every), list, describe, "
                        "pause, unpause, trigger, backfill, delete",
            _lazy("schedule", "add_schedule_arguments"), _lazy("schedule", "schedule_command")),
    Command("replay", "replay stored workflow histories (`temporal workflow show --output json`) against the "
                      "installed version, unsandboxed and sandboxed, before you upgrade workers; no server; "
                      "exit 0 all replay, 1 any diverges, 2 a bad file",
            _lazy("replay", "add_replay_arguments"), _lazy("replay", "replay_command")),
    Command("register", "validate playbook files and store each in the catalog under its metadata.path as the "
                        "next version (as POST /catalog; NoETL's `register playbook`); exit 2 if any is refused",
            _lazy("catalog", "add_register_arguments"), _lazy("catalog", "register_command")),
    Command("catalog", "the playbook catalog: `list`, `show PATH` (NoETL's `get`), `register FILE...`",
            _lazy("catalog", "add_catalog_command_arguments"), _lazy("catalog", "catalog_command")),
    Command("codec-server", "serve your codec (--codec) to the Temporal UI and `temporal --codec-endpoint`: "
                            "POST /encode and /decode, CORS for the UI's origins, claim-check references "
                            "resolved, so history reads as plaintext; runs until Ctrl-C",
            _lazy("codec_server", "add_codec_server_arguments"), _lazy("codec_server", "codec_server_command")),
    Command("test", "run playbook test files (*.test.yaml: cases with a payload, mocked tools and expectations) "
                    "on the engine in virtual time, no server (--temporal: through the real workflow on the embedded "
                    "dev server); pytest-like report, --junit-xml; exit 0 all "
                    "passed, 1 a case failed, 2 an invalid test file or no test file",
            _lazy("playtest", "add_test_arguments"), _lazy("playtest", "test_command")),
    Command("dev", "one-command local setup: embedded Temporal dev server with its UI, a worker and the API; "
                   "prints the three URLs and runs until Ctrl-C",
            _lazy("serve", "add_dev_arguments"), _lazy("serve", "dev_command")),
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``only`` (a command's name), only that command's arguments are
    added: adding the others imports their modules (`run`'s imports the engine), a third
    of the start-up of `validate`."""
    from .. import package_version

    parser = argparse.ArgumentParser(prog="noetl-temporal",
                                     description="Run NoETL v10 playbooks as Temporal workflows.")
    parser.add_argument("--version", action="version", version=f"noetl-temporal {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        if only is None or only == command.name:
            command.add_arguments(child)
        child.set_defaults(run=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    named = given[0] if given and given[0] in {c.name for c in COMMANDS} else None
    parser = build_parser(only=named)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) and usage errors (2) return instead of exiting
        return exc.code if isinstance(exc.code, int) else EXIT_INVALID
    return args.run(args)


#: set by console(): this process ends with os._exit, so nothing needs freeing before it
_EXITS_WITHOUT_CLEANUP = False


def console() -> None:
    """The ``noetl-temporal`` executable: ``main()``, then exit without interpreter finalization.

    The Temporal SDK's native runtime keeps threads that can abort a finalizing
    interpreter (``PyGILState_Release``) right after a command used a client; every
    command has finished its work and output by now, so skipping finalization loses nothing.
    """
    global _EXITS_WITHOUT_CLEANUP
    _EXITS_WITHOUT_CLEANUP = True
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_went_away()
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)


EXIT_BROKEN_PIPE = 128 + 13   # what a shell reports for a tool killed by SIGPIPE (`cat | head`)


def _reader_went_away() -> int:
    """The reader of our output closed it (``events ID | head``): stop quietly, as Unix tools do.

    Caught once here for every command rather than by restoring SIGPIPE's default action,
    which would kill a command mid-way (a ``run`` stopping its embedded server and worker)
    without its clean-up. What is still buffered for the closed pipe is dropped: pointing
    stdout at /dev/null keeps any later write from raising again.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    console()
