"""Keychain providers, entry references, rendering and scrubbing (no Temporal)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from noetl_temporal import keychain
from noetl_temporal.errors import ToolConfigError, ToolError
from noetl_temporal.keychain import (
    ChainProvider,
    EnvProvider,
    FileProvider,
    KeychainError,
    Scrubber,
    env_name,
    prepare,
    referenced_entries,
    secret_values,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in list(__import__("os").environ):
        if var.startswith("NOETL_KEYCHAIN_") or var == "NOETL_CREDENTIALS_FILE":
            monkeypatch.delenv(var)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    keychain.set_keychain_provider(None)


def test_env_names() -> None:
    assert env_name("pg_local") == "NOETL_KEYCHAIN_PG_LOCAL"
    assert env_name("my-api.v2") == "NOETL_KEYCHAIN_MY_API_V2"


def test_env_provider_json_dsn_string_and_fields() -> None:
    env = {
        "NOETL_KEYCHAIN_PG": json.dumps({"host": "db", "password": "from-json"}),
        "NOETL_KEYCHAIN_PG_PASSWORD": "from-field",
        "NOETL_KEYCHAIN_WH": "postgresql://u:pw@h/db",
        "NOETL_KEYCHAIN_API_TOKEN": "tok-123",
        "NOETL_KEYCHAIN_PLAIN": "just-a-string",
    }
    p = EnvProvider(env)
    assert p.resolve("pg", {}) == {"host": "db", "password": "from-field"}
    assert p.resolve("wh", {}) == {"value": "postgresql://u:pw@h/db", "dsn": "postgresql://u:pw@h/db"}
    assert p.resolve("api", {}) == {"token": "tok-123"}
    assert p.resolve("plain", {}) == {"value": "just-a-string"}
    assert p.resolve("missing", {}) is None
    # a declaration may point at another stored credential
    assert p.resolve("alias", {"credential": "api"}) == {"token": "tok-123"}
    with pytest.raises(KeychainError):
        EnvProvider({"NOETL_KEYCHAIN_BAD": "{not json"}).resolve("bad", {})


def test_file_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "creds.yaml"
    creds.write_text("pg:\n  host: db\n  password: filepw\nwh: postgresql://u:pw@h/db\n")
    monkeypatch.setenv("NOETL_CREDENTIALS_FILE", str(creds))
    p = FileProvider()
    assert p.path == creds
    assert p.resolve("pg", {}) == {"host": "db", "password": "filepw"}
    assert p.resolve("wh", {})["dsn"] == "postgresql://u:pw@h/db"
    assert p.resolve("nope", {}) is None
    assert FileProvider(tmp_path / "absent.yaml").resolve("pg", {}) is None
    creds.write_text("pg: [unclosed\n")
    with pytest.raises(KeychainError, match="not valid YAML"):
        p.resolve("pg", {})


def test_default_chain_env_wins_per_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "config" / "noetl-temporal" / "credentials.yaml"
    creds.parent.mkdir(parents=True)
    creds.write_text("pg:\n  host: filehost\n  password: filepw\n  dbname: filedb\n")
    monkeypatch.setenv("NOETL_KEYCHAIN_PG_PASSWORD", "envpw")
    provider = keychain.get_keychain_provider()
    assert isinstance(provider, ChainProvider)
    entry = keychain.resolve_entry("pg", {"name": "pg", "kind": "postgres", "port": 5433}, provider)
    assert entry == {"port": 5433, "host": "filehost", "password": "envpw", "dbname": "filedb"}
    with pytest.raises(KeychainError) as info:
        keychain.resolve_entry("nope", None, provider)
    assert "NOETL_KEYCHAIN_NOPE" in info.value.fix and "credentials.yaml" in info.value.fix


class _Vault:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def resolve(self, name, declaration):
        self.calls.append((name, dict(declaration)))
        return {"token": f"vault-{name}"} if name == "api" else None


vault = _Vault()


def test_custom_provider_by_setting_and_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    custom = _Vault()
    keychain.set_keychain_provider(custom)
    try:
        out = prepare("http", {"headers": {"A": "{{ keychain.api.token }}"}}, declarations=[{"name": "api"}])
        assert out.config["headers"]["A"] == "vault-api"
        assert custom.calls == [("api", {"name": "api"})]
    finally:
        keychain.set_keychain_provider(None)
    monkeypatch.setenv("NOETL_KEYCHAIN_PROVIDER", f"{__name__}:vault")
    assert keychain.get_keychain_provider() is vault
    monkeypatch.setenv("NOETL_KEYCHAIN_PROVIDER", "no.such.module:x")
    with pytest.raises(KeychainError):
        keychain.get_keychain_provider()


def test_referenced_entries() -> None:
    config = {"url": "https://x/{{ workload.path }}",
              "headers": {"Authorization": "Bearer {{ keychain.api.token }}",
                          "X-Other": "{{ keychain['other'].key }}"},
              "list": ["{{ keychain.third.v | upper }}"]}
    assert referenced_entries(config) == {"api", "other", "third"}
    dynamic = {"h": "{{ keychain[workload.which].token }}"}
    assert referenced_entries(dynamic, [{"name": "a"}, {"name": "b"}]) == {"a", "b"}


def test_prepare_renders_only_keychain_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", "s3cr3t-token")
    config = {"url": "http://h/{{ not_rendered }}",  # already rendered by the engine: left alone
              "headers": {"Authorization": "Bearer {{ keychain.api.token }}", "X-Id": "{{ keychain.api.token | length }}"},
              "body": "for {{ who }}: {{ keychain.api.token }}"}
    out = prepare("http", config, secret_context={"who": "me"}, declarations=[{"name": "api"}])
    assert out.config["url"] == "http://h/{{ not_rendered }}"
    assert out.config["headers"] == {"Authorization": "Bearer s3cr3t-token", "X-Id": 12}
    assert out.config["body"] == "for me: s3cr3t-token"
    assert out.entries == {"api": {"token": "s3cr3t-token"}}
    assert out.scrubber.text("echo: Bearer s3cr3t-token") == "echo: ***"
    assert prepare("http", {"url": "http://h"}).scrubber.secrets == ()


def test_prepare_postgres_auth_and_literal_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOETL_KEYCHAIN_PG", json.dumps({"host": "127.0.0.1", "user": "root", "password": "pw-9876"}))
    out = prepare("postgres", {"auth": "pg", "query": "SELECT 1"})
    assert out.entries["pg"]["password"] == "pw-9876"
    assert "pw-9876" in out.scrubber.secrets
    assert "root" not in out.scrubber.secrets and "127.0.0.1" not in out.scrubber.secrets  # public fields
    for literal in ({"dsn": "postgresql://u:pw@h/db"}, {"connection": {"host": "h", "password": "pw"}},
                    {"auth": {"host": "h", "password": "pw"}}):
        with pytest.raises(ToolConfigError, match="workflow history"):
            prepare("postgres", {**literal, "query": "SELECT 1"})
    via_template = prepare("postgres", {"dsn": "postgresql://{{ keychain.pg.user }}:{{ keychain.pg.password }}"
                                              "@{{ keychain.pg.host }}/test", "query": "SELECT 1"})
    assert via_template.config["dsn"] == "postgresql://root:pw-9876@127.0.0.1/test"
    assert via_template.scrubber.text(via_template.config["dsn"]) == "***"
    # auth rendered from a keychain template naming another entry
    monkeypatch.setenv("NOETL_KEYCHAIN_SELECTOR_NAME", "pg")
    chosen = prepare("postgres", {"auth": "{{ keychain.selector.name }}", "query": "SELECT 1"})
    assert "pg" in chosen.entries


def test_what_a_kind_needs_from_the_keychain_is_its_declared_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    # prepare asks the kind's declaration, never tests a kind name: a kind declaring
    # Credentials gets its auth entry resolved and its connection keys guarded.
    from noetl_temporal.tool_kinds import DECLARATIONS
    from noetl_temporal.tool_kinds.declaration import Credentials, ToolKind

    declared = ToolKind(kind="warehouse", summary="a test kind", settings=(),
                        credentials=Credentials(auth="account", connection=("url",)))
    monkeypatch.setitem(DECLARATIONS, "warehouse", declared)
    monkeypatch.setenv("NOETL_KEYCHAIN_WH", json.dumps({"url": "wh://u:pw-4321@h"}))
    assert keychain.needs_keychain("warehouse", {})
    assert prepare("warehouse", {"account": "wh"}).entries["wh"]["url"] == "wh://u:pw-4321@h"
    with pytest.raises(ToolConfigError, match="warehouse 'url' is written in the playbook") as info:
        prepare("warehouse", {"url": "wh://u:pw@h"})
    assert "'account: <name>'" in (info.value.fix or "")
    assert prepare("warehouse", {"auth": "wh"}).entries == {}  # `auth` is not this kind's key


def test_prepare_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KeychainError, match="'api' not found"):
        prepare("http", {"headers": {"A": "{{ keychain.api.token }}"}})
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", "tok-1234")
    with pytest.raises(ToolError) as info:
        prepare("http", {"headers": {"A": "{{ keychain.api.token + 1 }}"}})
    assert info.value.kind == "template" and "tok-1234" not in str(info.value)


def test_secret_values_and_scrubber() -> None:
    entries = {"pg": {"host": "db.local", "user": "admin", "password": "p@ss word", "port": 5432,
                      "dsn": "postgresql://admin:p%40ss%20word@db.local/app"},
               "api": {"token": "abc", "nested": {"key": "k-5555"}}}
    secrets = secret_values(entries, rendered=["db.local", "Basic YWRtaW46cA=="])
    assert "p@ss word" in secrets and "p%40ss%20word" in secrets and "k-5555" in secrets
    assert "abc" not in secrets  # too short to mask safely
    assert "db.local" not in secrets and "admin" not in secrets
    assert "Basic YWRtaW46cA==" in secrets  # a value rendered from a secret template
    scrub = Scrubber(secrets)
    value = {"k-5555": ["token k-5555", {"dsn": "postgresql://admin:p%40ss%20word@db.local/app"}], "n": 1}
    assert scrub(value) == {"***": ["token ***", {"dsn": "***"}], "n": 1}
    assert Scrubber(["longer-secret", "longer"]).text("longer-secret longer") == "*** ***"
    assert not Scrubber()


@pytest.mark.parametrize("form", [
    lambda s: s,
    lambda s: json.dumps({"echo": s}),                      # a server echoing it in JSON
    lambda s: json.dumps(json.dumps({"echo": s})),          # JSON inside a JSON string
    lambda s: repr({"echo": s}),                            # a Python repr in a text body
    lambda s: "q=" + quote(s, safe=""),                     # URL-encoded
    lambda s: "q=" + quote_plus(s),
    lambda s: base64.b64encode(s.encode()).decode(),        # base64, on its own
    lambda s: base64.b64encode(b"user:" + s.encode()).decode(),    # ... and inside a longer value
    lambda s: base64.b64encode(b"us:" + s.encode() + b"!").decode(),
    lambda s: base64.urlsafe_b64encode(b"x" + s.encode()).decode(),
], ids=["raw", "json", "json-twice", "repr", "url", "url-plus", "base64", "base64-shift-2", "base64-shift-0",
        "base64-url"])
def test_a_secret_is_masked_in_every_form_it_takes_on_the_way_out(form) -> None:
    """Issue 24: a secret holding quotes and backslashes came back JSON-escaped or as a
    repr, and was shown in the API, events, history and ``run --json``."""
    secret = 'pa"ss\\w0rd\'-é/+ secret'
    shown = Scrubber(secret_values({"api": {"token": secret}})).text(form(secret))
    assert "***" in shown
    for piece in (secret[i:i + 6] for i in range(len(secret) - 5)):
        assert piece not in shown, shown
    encoded = {base64.b64encode(secret.encode()).decode(), base64.b64encode(b"user:" + secret.encode()).decode()}
    assert not any(e[8:-8] in shown for e in encoded), shown


@pytest.mark.parametrize("encode", [
    lambda s: quote(s, safe=""),
    quote_plus,
    lambda s: quote(s, safe="/:@!()*'~+"),           # httpx's choice for a URL it is given
    lambda s: quote(s, safe="").lower(),              # lower-case hex
    lambda s: quote(s[:5], safe="") + s[5:],          # half escaped
], ids=["quote", "quote_plus", "client-safe-set", "lower-hex", "mixed"])
def test_a_secret_is_masked_in_any_percent_encoding(encode) -> None:
    """Issue 38: only quote() and quote_plus() forms were masked; a client escaping fewer
    characters sent (and echoed) a form no list of variants held."""
    secret = "s3cr3t p/a:s@s!(x)*'~+é"
    assert Scrubber(secret_values({"api": {"token": secret}})).text(f"?t={encode(secret)}&n=1") == "?t=***&n=1"


def test_a_window_masks_a_secret_across_its_edges_whole() -> None:
    """Issue 38: masking shortens a text, so cutting the masked text showed a secret cut there."""
    scrub = Scrubber(["tk-0123456789abcdef"])
    text = "tk-0123456789abcdef\n" * 10
    head = scrub.window(text, 0, 50)        # the cut falls inside the third copy
    assert head == "***\n***\n***" and "tk-" not in head
    tail = scrub.window(text, len(text) - 30, len(text))
    assert tail == "***\n***\n" and scrub.head(text, 50) == "***\n***\n***..."
    assert Scrubber().window(text, 0, 5) == "tk-01"
