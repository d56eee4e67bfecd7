"""What `noetl-temporal schedule` reads before it talks to Temporal: durations and overlap
policies (the end-to-end runs are tests/cli/test_cli_schedules.py)."""

from __future__ import annotations

import pytest

from noetl_temporal.cli.main import main
from noetl_temporal.cli.schedule import OVERLAPS
from noetl_temporal.client.schedules import OVERLAP_POLICIES, ScheduleInvalid, parse_duration, parse_time


def test_the_cli_spells_every_overlap_policy():
    assert OVERLAPS == tuple(OVERLAP_POLICIES)


@pytest.mark.parametrize(("text", "seconds"), [("1s", 1), ("90", 90), ("500ms", 0.5), ("10m", 600),
                                               ("1h30m", 5400), ("2d", 172800), ("1.5s", 1.5)])
def test_durations(text, seconds):
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "soon", "0s", "-1s", "5 parsecs"])
def test_bad_durations_say_how_to_write_one(text):
    with pytest.raises(ScheduleInvalid, match="fix: "):
        parse_duration(text, "--every")


def test_times_without_an_offset_are_utc_and_bad_ones_say_how():
    assert parse_time("2026-01-31T12:00:00").isoformat() == "2026-01-31T12:00:00+00:00"
    assert parse_time("2026-01-31T13:00:00+01:00").isoformat() == "2026-01-31T12:00:00+00:00"
    with pytest.raises(ScheduleInvalid, match="RFC 3339"):
        parse_time("yesterday", "--start")


def test_create_needs_exactly_one_of_cron_and_every(capsys):
    assert main(["schedule", "create", "n", "pb.yaml"]) == 2
    assert "one of the arguments --cron --every is required" in capsys.readouterr().err
    assert main(["schedule", "create", "n", "pb.yaml", "--cron", "@daily", "--every", "1h"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_without_a_server_it_says_how_to_name_one(monkeypatch, capsys):
    for var in ("TEMPORAL_ADDRESS", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", "/nonexistent/temporal.toml")
    assert main(["schedule", "list"]) == 2
    err = capsys.readouterr().err
    assert "schedules live on a running Temporal server" in err and "--address" in err
