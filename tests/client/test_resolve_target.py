"""``resolve_target``: flags, Temporal's environment variables and config profiles (envconfig).

Temporal Cloud needs TLS and an API key besides the address; they must come along
whether the address is given by ``TEMPORAL_ADDRESS`` or by a profile.
"""

from __future__ import annotations

import pytest

from noetl_temporal.client.connect import resolve_target
from noetl_temporal.errors import ConfigError

PROFILES = """
[profile.cloud]
address = "acct.tmprl.cloud:7233"
namespace = "prod.acct"
api_key = "key-1"

[profile.mtls]
address = "temporal.internal:7233"
[profile.mtls.tls]
client_cert_path = "{cert}"
client_key_path = "{key}"
"""


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE",
                 "TEMPORAL_TLS", "NOETL_TASK_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "c.pem").write_text("cert")
    (tmp_path / "k.pem").write_text("key")
    config = tmp_path / "temporal.toml"
    config.write_text(PROFILES.format(cert=tmp_path / "c.pem", key=tmp_path / "k.pem"))
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    return monkeypatch


def test_nothing_configured_means_embedded(clean_env, tmp_path):
    clean_env.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "none.toml"))
    target = resolve_target()
    assert target.address is None and target.namespace == "default" and target.task_queue == "noetl-playbooks"


def test_environment_carries_api_key_and_tls(clean_env):
    clean_env.setenv("TEMPORAL_ADDRESS", "acct.tmprl.cloud:7233")
    clean_env.setenv("TEMPORAL_NAMESPACE", "prod.acct")
    clean_env.setenv("TEMPORAL_API_KEY", "key-2")
    target = resolve_target()
    assert (target.address, target.namespace) == ("acct.tmprl.cloud:7233", "prod.acct")
    assert target.connect_config["api_key"] == "key-2" and target.connect_config["tls"] is True


def test_cloud_profile(clean_env):
    target = resolve_target(profile="cloud")
    assert (target.address, target.namespace, target.profile) == ("acct.tmprl.cloud:7233", "prod.acct", "cloud")
    assert target.connect_config["api_key"] == "key-1" and target.connect_config["tls"] is True
    clean_env.setenv("TEMPORAL_PROFILE", "cloud")
    assert resolve_target().connect_config["api_key"] == "key-1"


def test_mtls_profile_reads_the_certificates(clean_env):
    tls = resolve_target(profile="mtls").connect_config["tls"]
    assert tls.client_cert == b"cert" and tls.client_private_key == b"key"


def test_flags_override_the_profile(clean_env):
    target = resolve_target(address="127.0.0.1:7233", namespace="other", task_queue="q", profile="cloud")
    assert (target.address, target.namespace, target.task_queue) == ("127.0.0.1:7233", "other", "q")
    assert target.connect_config["api_key"] == "key-1"  # the named profile's credentials still apply
    plain = resolve_target(address="127.0.0.1:7233")
    assert plain.connect_config is None  # a bare --address connects without TLS


def test_unknown_profile_is_a_clear_error(clean_env):
    with pytest.raises(ConfigError, match="profile 'nope' could not be loaded"):
        resolve_target(profile="nope")
