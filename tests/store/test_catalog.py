"""The catalog on SQLite and on a real PostgreSQL: validation, versions, reads."""

from __future__ import annotations

import threading

import pytest

from noetl_temporal.errors import ConfigError, NotFound, PlaybookInvalid
from noetl_temporal.store.catalog import Catalog, default_sqlite_path

V1 = """apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: daily, path: team/daily}
workflow:
  - step: a
    tool: {kind: noop}
"""
V2 = V1.replace("kind: noop}", "kind: noop, result: 2}")


@pytest.fixture(params=["sqlite", "postgresql"])
def any_catalog(request, tmp_path):
    if request.param == "sqlite":
        yield Catalog(sqlite_path=tmp_path / "sub" / "catalog.db")
        return
    schema = request.getfixturevalue("pg_schema")
    dsn = request.getfixturevalue("pg_dsn")
    catalog = Catalog(dsn=dsn, table=f"{schema}.playbooks")
    yield catalog
    catalog.drop()


def test_versions_increment_per_path_and_same_content_is_not_a_new_version(any_catalog):
    first = any_catalog.register(V1)
    assert first["path"] == "team/daily" and first["version"] == 1 and first["created"]
    again = any_catalog.register(V1)
    assert again["version"] == 1 and not again["created"]
    second = any_catalog.register(V2)
    assert second["version"] == 2 and second["created"]
    other = any_catalog.register(V1.replace("path: team/daily", "path: team/other"))
    assert other["version"] == 1
    assert any_catalog.register(V1)["version"] == 3  # back to old content: a new version, latest wins

    assert any_catalog.get("team/daily") == (V1, 3)
    assert any_catalog.get("team/daily", 2) == (V2, 2)
    assert any_catalog.get("team/daily", 1) == (V1, 1)
    listing = {item["path"]: item for item in any_catalog.list()}
    assert listing["team/daily"]["latest_version"] == 3 and listing["team/daily"]["versions"] == 3
    assert listing["team/other"]["latest_version"] == 1
    assert [v["version"] for v in any_catalog.versions("team/daily")] == [1, 2, 3]


def test_unknown_path_or_version_is_not_found(any_catalog):
    any_catalog.register(V1)
    with pytest.raises(NotFound):
        any_catalog.get("nope")
    with pytest.raises(NotFound):
        any_catalog.get("team/daily", 9)


def test_invalid_playbooks_are_rejected_with_located_errors_and_nothing_is_stored(any_catalog):
    with pytest.raises(PlaybookInvalid) as info:
        any_catalog.register("workflow:\n  - step: a\n    tool: {kind: nope}\n")
    diag = info.value.diagnostics[0]
    assert diag.line == 3 and diag.code.startswith("NTL")
    with pytest.raises(PlaybookInvalid) as info:
        any_catalog.register("workflow:\n  - step: a\n    tool: {kind: noop}\n")  # no name or path
    assert info.value.diagnostics[0].code == "CATALOG001"
    with pytest.raises(PlaybookInvalid) as info:
        any_catalog.register(V1.replace("path: team/daily", "path: 'has spaces'"))
    assert info.value.diagnostics[0].code == "CATALOG002" and info.value.diagnostics[0].line == 3
    assert any_catalog.list() == []


def test_concurrent_registrations_get_distinct_versions(any_catalog):
    texts = [V1.replace("kind: noop}", f"kind: noop, result: {i}}}") for i in range(8)]
    results: list[dict] = []
    errors: list[BaseException] = []

    def register(text: str) -> None:
        try:
            results.append(any_catalog.register(text))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=register, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r["version"] for r in results) == list(range(1, 9))


def test_sqlite_file_is_created_on_first_use_under_xdg_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_sqlite_path() == tmp_path / "data" / "noetl-temporal" / "catalog.db"
    catalog = Catalog.from_config()
    assert catalog.kind == "sqlite" and not default_sqlite_path().exists()
    catalog.register(V1)
    assert default_sqlite_path().exists()


def test_configuration(monkeypatch, tmp_path):
    monkeypatch.setenv("NOETL_CATALOG_DSN", "postgresql://u@h/db")
    assert Catalog.from_config().kind == "postgresql"
    assert Catalog.from_config(dsn=f"sqlite:///{tmp_path}/c.db").sqlite_path == tmp_path / "c.db"
    with pytest.raises(ConfigError):
        Catalog.from_config(dsn="mysql://x")
    with pytest.raises(ConfigError):
        Catalog(sqlite_path=tmp_path / "c.db", table="x; drop table y")


def test_noetls_leading_slash_names_the_catalog_root(any_catalog):
    """NoETL writes catalog paths from the root (`metadata.path: /vars_test/api_test`): the
    same entry as `vars_test/api_test`, whichever way it is registered or read."""
    first = any_catalog.register(V1.replace("path: team/daily", "path: /team/daily"))
    assert (first["path"], first["version"]) == ("team/daily", 1)
    assert any_catalog.register(V1)["path"] == "team/daily"    # the same entry: its version 2
    assert any_catalog.get("/team/daily") == any_catalog.get("team/daily") == (V1, 2)
    assert [v["version"] for v in any_catalog.versions("/team/daily")] == [1, 2]
    with pytest.raises(PlaybookInvalid) as info:               # two slashes: still an empty segment
        any_catalog.register(V1.replace("path: team/daily", "path: //team/daily"))
    assert info.value.diagnostics[0].code == "CATALOG002"
