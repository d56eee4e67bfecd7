"""What a worker registers for playbooks, and how build_worker merges it with the user's own."""

from __future__ import annotations

import pytest
from temporalio import activity, workflow
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import UnsandboxedWorkflowRunner, WorkerDeploymentConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from noetl_temporal.hosting.registration import REQUIRED_ACTIVITIES, SANDBOX_ENV, registration
from noetl_temporal.store.event_store import SqliteEventStore
from noetl_temporal.workflow.metrics import MetricsInterceptor
from noetl_temporal.workflow.playbook_workflow import PlaybookWorkflow
from noetl_temporal.workflow.types import WORKFLOW_NAME
from tests.support.user_worker import CountingInterceptor, Greeting, shout

VERSIONED = WorkerDeploymentConfig(version=WorkerDeploymentVersion(deployment_name="d", build_id="b"),
                                   use_worker_versioning=True)


@pytest.fixture
def ours(tmp_path):
    return registration(SqliteEventStore(str(tmp_path / "events.db")), sandboxed=False)


def _definition(cls: type) -> workflow._Definition:
    defn = workflow._Definition.from_class(cls)
    assert defn is not None
    return defn


def test_every_activity_the_workflow_calls_is_registered(ours):
    names = {activity._Definition.must_from_callable(fn).name for fn in ours.activities}
    assert set(REQUIRED_ACTIVITIES) <= names


def test_the_users_workflows_activities_and_interceptors_are_merged(ours):
    users = CountingInterceptor()
    options = ours.worker_options(workflows=[Greeting], activities=[shout], interceptors=[users],
                                  max_cached_workflows=7)
    assert options["workflows"] == [Greeting, PlaybookWorkflow]
    assert options["activities"] == [shout, *ours.activities]
    assert isinstance(options["interceptors"][0], MetricsInterceptor) and options["interceptors"][1] is users
    assert options["max_cached_workflows"] == 7
    # The worker's runner stays the SDK's sandbox for the user's workflows ...
    assert isinstance(options["workflow_runner"], SandboxedWorkflowRunner)
    # ... while ours opts out by itself, whatever runner the worker has.
    assert _definition(PlaybookWorkflow).sandboxed is False
    assert _definition(Greeting).sandboxed is True
    mine = UnsandboxedWorkflowRunner()
    assert ours.worker_options(workflow_runner=mine)["workflow_runner"] is mine


@pytest.mark.parametrize(("sandboxed", "versioned"), [(False, False), (True, False), (False, True), (True, True)])
def test_the_workflow_variant_fits_the_worker(tmp_path, sandboxed, versioned):
    reg = registration(SqliteEventStore(str(tmp_path / "events.db")), sandboxed=sandboxed)
    options = reg.worker_options(**({"deployment_config": VERSIONED} if versioned else {}))
    [cls] = options["workflows"]
    defn = _definition(cls)
    assert defn.name == WORKFLOW_NAME and defn.sandboxed is sandboxed
    # Versioned workers must declare a behaviour; unversioned ones must not (the server refuses it).
    assert defn.versioning_behavior == (VersioningBehavior.AUTO_UPGRADE if versioned
                                        else VersioningBehavior.UNSPECIFIED)


def test_the_environment_asks_for_the_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv(SANDBOX_ENV, "1")
    reg = registration(SqliteEventStore(str(tmp_path / "events.db")))
    assert reg.sandboxed and _definition(reg.workflows()[0]).sandboxed
    monkeypatch.setenv(SANDBOX_ENV, "0")
    assert not registration(SqliteEventStore(str(tmp_path / "events.db"))).sandboxed
