"""`run --dry-run` of a playbook with NoETL's `kind: container`: the refusal (NTL338), then the
Kubernetes Job NoETL would submit, through the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests/corpus/noetl-e2e/fixtures/playbooks"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def jobs(stdout: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(stdout) if d]


def test_the_job_of_noetl_s_happy_path_fixture():
    path = FIXTURES / "container_callback_happy_path/container_callback_happy_path.yaml"
    proc = cli("run", str(path), "--dry-run")
    assert proc.returncode == 2
    assert f"{path}:54:13: NTL338" in proc.stderr and "Kubernetes" in proc.stderr
    (job,) = jobs(proc.stdout)
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert job["metadata"]["generateName"] == "noetl-dispatch-container-"
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 120
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["image"] == "alpine:3.19" and container["command"] == ["/bin/sh", "-c"]
    assert container["args"] == ["echo CTC_HAPPY_PATH; sleep 3; echo done"]
    assert container["resources"]["limits"] == {"cpu": "200m", "memory": "128Mi"}


def test_every_container_task_gets_its_job_with_env_account_and_templates_as_written():
    path = FIXTURES / "container_postgres_init/container_postgres_init.yaml"
    proc = cli("run", str(path), "--dry-run")
    assert proc.returncode == 2 and "NTL101" in proc.stderr  # its other refusal is still reported
    found = jobs(proc.stdout)
    assert len(found) == proc.stderr.count("NTL338") == 3
    first = found[0]
    assert first["metadata"]["namespace"] == "{{ namespace }}"
    pod = first["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "noetl-worker"
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["EXECUTION_ID"] == "exec-{{ execution_id }}"


def test_no_job_without_a_container_task(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflow:\n  - step: a\n    tool: {kind: snowflake}\n")
    proc = cli("run", str(bad), "--dry-run")
    assert proc.returncode == 2 and "NTL336" in proc.stderr and proc.stdout == ""
