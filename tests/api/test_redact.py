"""The variables view hides secrets: the pure redaction function."""

from __future__ import annotations

import pytest

from noetl_temporal.client.redact import MASK, is_secret_key, redact


@pytest.mark.parametrize("key", ["password", "db_password", "PGPASSWORD", "api_key", "apiKey", "x-api-key",
                                 "token", "accessToken", "refresh_token", "client_secret", "secrets", "key",
                                 "private_key", "credentials", "auth", "Authorization", "pg_dsn", "dsn",
                                 "sessionCookie", "aws_secret_access_key", "bearer"])
def test_secret_looking_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["name", "author", "keys_count", "monkey", "city", "items", "host", "port",
                                 "approved", "url", "description", "tokenizer_name_x"[:4]])
def test_ordinary_keys(key):
    assert not is_secret_key(key)


def test_redacts_nested_values_and_lists_and_reports_paths():
    hidden: list[str] = []
    value = {"db": {"host": "h", "password": "pw", "users": [{"name": "a", "token": "t1"}]},
             "api_key": "k", "empty_secret": "", "none_token": None, "n": 3}
    out = redact(value, path="workload", hidden=hidden)
    assert out == {"db": {"host": "h", "password": MASK, "users": [{"name": "a", "token": MASK}]},
                   "api_key": MASK, "empty_secret": "", "none_token": None, "n": 3}
    assert hidden == ["workload.db.password", "workload.db.users[0].token", "workload.api_key"]
    assert value["db"]["password"] == "pw"  # the input is not changed


def test_masks_credentials_inside_urls():
    hidden: list[str] = []
    out = redact({"target": "postgresql://app:s3cr3t@db:5432/x", "web": "https://example.com/a"},
                 hidden=hidden)
    assert out == {"target": f"postgresql://app:{MASK}@db:5432/x", "web": "https://example.com/a"}
    assert hidden == ["target"]


def test_plain_values_pass_through():
    assert redact(5) == 5 and redact("text") == "text" and redact(None) is None
    assert redact(("a", {"secret": 1})) == ["a", {"secret": MASK}]
