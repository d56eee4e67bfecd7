"""The Temporal connection flags are defined once (cli/connection.py) for every command."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from noetl_temporal.cli.connection import (
    CATALOG_FLAGS,
    CONNECTION_FLAGS,
    add_catalog_arguments,
    add_connection_arguments,
    target_of,
)
from noetl_temporal.cli.main import build_parser
from noetl_temporal.workflow.types import DEFAULT_TASK_QUEUE

CLI = Path(__file__).resolve().parents[2] / "noetl_temporal" / "cli"
SERVER = {"--address", "--namespace", "--profile", "--codec"}
EXPECTED = {
    "run": SERVER | {"--task-queue"},
    "status": SERVER, "events": SERVER,
    "cancel": SERVER, "pause": SERVER, "resume": SERVER, "ctx": SERVER,
    "approve": SERVER, "skip": SERVER, "pause-step": SERVER, "resume-step": SERVER,
    "retry-now": SERVER, "set-retry": SERVER,
    "worker": SERVER | {"--task-queue"},
    "api": SERVER | {"--task-queue"},
    "dev": {"--task-queue", "--codec"},
    "replay": {"--codec"},   # replays a history file: no server, the codec that reads it
    "setup": SERVER,
    "redrive": SERVER | {"--task-queue"},
    "codec-server": {"--codec"},   # serves codec requests: no server of its own to reach (--only-namespace filters)
    "schedule": set(),   # its subcommands take them:
    "schedule create": SERVER | {"--task-queue"},
    **{f"schedule {name}": SERVER
       for name in ("list", "describe", "pause", "unpause", "trigger", "backfill", "delete")},
    "validate": set(), "schema": set(), "graph": set(),
    "test": set(),   # no server, or (--temporal) the embedded dev server it starts itself
    "register": set(), "catalog": set(),   # the catalog's own flags (CATALOG below), no Temporal
    **{f"catalog {name}": set() for name in ("list", "show", "get", "register")},
}
#: commands that read or write the playbook catalog take its flags (`catalog ACTION`: each action)
CATALOG = {"run", "api", "dev", "register", "catalog list", "catalog show", "catalog register"}


def _subparsers(parser: argparse.ArgumentParser | None = None, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by name, a subcommand's as "command sub" (``schedule create``)."""
    parser = parser or build_parser()
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found[prefix + name] = child
                found.update(_subparsers(child, f"{prefix}{name} "))
    return found


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: action for action in parser._actions for opt in action.option_strings
            if opt in CONNECTION_FLAGS}


def test_every_command_has_its_connection_flags():
    subs = _subparsers()
    assert set(subs) == set(EXPECTED)
    for name, parser in subs.items():
        assert set(_flags(parser)) == EXPECTED[name], name


def test_the_catalog_flags_are_on_every_command_that_uses_the_catalog():
    reference = argparse.ArgumentParser()
    add_catalog_arguments(reference)
    helps = {a.option_strings[0]: a.help for a in reference._actions if a.option_strings[0] in CATALOG_FLAGS}
    having = set()
    for name, parser in _subparsers().items():
        if name == "catalog get":   # `show`'s alias: the same parser
            continue
        flags = {opt: a for a in parser._actions for opt in a.option_strings if opt in CATALOG_FLAGS}
        if flags:
            having.add(name)
            assert set(flags) == set(CATALOG_FLAGS), name
            assert {opt: a.help for opt, a in flags.items()} == helps, name
    assert having == CATALOG


@pytest.mark.parametrize("name", ["run", "status", "cancel", "worker", "api", "dev", "replay", "schedule create",
                                  "schedule backfill"])
def test_the_flags_mean_the_same_everywhere(name):
    reference = argparse.ArgumentParser()
    add_connection_arguments(reference)
    ours = _flags(reference)
    for flag, action in _flags(_subparsers()[name]).items():
        if flag == "--address":  # the help may add what happens without one
            assert action.help.startswith(ours[flag].help.rstrip(")")), name
        else:
            assert action.help == ours[flag].help, (name, flag)
        assert (action.dest, action.metavar, action.default) == \
            (ours[flag].dest, ours[flag].metavar, ours[flag].default), (name, flag)


def test_only_the_connection_module_defines_them():
    for path in CLI.glob("*.py"):
        if path.name == "connection.py":
            continue
        text = path.read_text()
        for flag in CONNECTION_FLAGS + CATALOG_FLAGS:
            assert f'add_argument("{flag}"' not in text, (path.name, flag)


def test_target_of_reads_the_flags(monkeypatch):
    for var in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_PROFILE", "NOETL_TASK_QUEUE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", "/nonexistent/temporal.toml")
    parser = build_parser()
    run = parser.parse_args(["run", "pb.yaml", "--address", "h:7233", "--namespace", "ns", "--task-queue", "q"])
    target = target_of(run)
    assert (target.address, target.namespace, target.task_queue) == ("h:7233", "ns", "q")
    status = parser.parse_args(["status", "ID", "--address", "h:7233"])
    assert (target_of(status).namespace, target_of(status).task_queue) == ("default", DEFAULT_TASK_QUEUE)
    monkeypatch.setenv("NOETL_TASK_QUEUE", "from-env")
    dev = parser.parse_args(["dev"])
    assert target_of(dev).task_queue == "from-env"
    assert target_of(dev).address is None
