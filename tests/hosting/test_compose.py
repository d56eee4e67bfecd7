"""docker/compose.yaml and docker/Dockerfile: the multi-worker deployment is well-formed.

``docker compose config`` validates the file where the docker CLI has its compose plugin
(skipped with the reason otherwise; no engine is needed). The structural checks run
everywhere: every noetl service's command parses with this CLI's own parser (so a
renamed flag breaks the test, not a deployment), and the API and both workers share the
same PostgreSQL stores. The topology itself runs in test_multi_worker.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from noetl_temporal.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker" / "compose.yaml"
DOCKERFILE = REPO / "docker" / "Dockerfile"
STORES = ("NOETL_STORE", "NOETL_CATALOG_DSN")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _noetl_services(compose: dict) -> dict[str, dict]:
    return {name: svc for name, svc in compose["services"].items()
            if svc.get("image") == "noetl-temporal:local" and "build" in svc}


def test_topology(compose):
    services = compose["services"]
    assert {"postgres", "temporal", "temporal-ui", "api", "worker-1", "worker-2"} <= set(services)
    assert services["temporal"]["environment"]["DB"] == "postgres12"  # Temporal on PostgreSQL
    assert set(_noetl_services(compose)) == {"api", "worker-1", "worker-2"}


def test_commands_parse_with_this_cli(compose):
    parser = build_parser()
    commands = {}
    for name, svc in _noetl_services(compose).items():
        args = parser.parse_args(svc["command"])  # SystemExit (a failure) on an unknown flag
        commands[name] = args.command
    assert commands == {"api": "api", "worker-1": "worker", "worker-2": "worker"}


def test_api_and_workers_share_postgres_stores(compose):
    envs = [svc["environment"] for svc in _noetl_services(compose).values()]
    for key in STORES:
        values = {env[key] for env in envs}
        assert len(values) == 1 and next(iter(values)).startswith("postgresql://"), (key, values)
    assert {env["TEMPORAL_ADDRESS"] for env in envs} == {"temporal:7233"}
    api = compose["services"]["api"]
    assert api["environment"]["NOETL_API_TOKEN"]  # it binds 0.0.0.0: a token is required


def test_dockerfile_installs_this_package():
    text = DOCKERFILE.read_text()
    for part in ("noetl_temporal", "examples"):
        assert f"COPY {part} ./{part}" in text
    assert "pip install '.[data]'" in text and 'ENTRYPOINT ["noetl-temporal"]' in text


def test_docker_compose_config_validates():
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker CLI not installed")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"`docker compose` is not available here: {(probe.stderr or probe.stdout).strip()[:200]}")
    result = subprocess.run([docker, "compose", "-f", str(COMPOSE), "config", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
