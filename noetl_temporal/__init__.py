"""noetl-temporal: run NoETL v10 playbooks as Temporal workflows.

Public API (imported lazily, so ``import noetl_temporal`` stays cheap and the workflow
sandbox only loads what it needs)::

    from noetl_temporal import load_playbook, run_playbook, Target
    report = asyncio.run(run_playbook(load_playbook("p.yaml").playbook, target=Target(address=None)))

    # embedding in your Temporal deployment (docs/deployment.md, "Embedding")
    from noetl_temporal import data_converter, build_worker, registration, start_execution
    client = await Client.connect(address, data_converter=data_converter(your_codec_or_converter))
    worker = build_worker(client, task_queue="q", workflows=[...], activities=[...])  # yours merged
    output = await noetl_temporal.workflow.execute_playbook("etl/nightly", payload={...})  # in your workflow

    import noetl_temporal                      # NoETL's `noetl.run`, same call and envelope
    outcome = noetl_temporal.run("p.yaml", variables={"region": "west"})   # raise_on_failure=True: NoETL's raise
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    # the playbook language
    "load_playbook", "load_playbook_text", "validate_text", "playbook_json_schema", "Playbook",
    "Diagnostic",
    # running
    "run", "run_async", "run_playbook", "run_with_client", "RunReport", "Target",
    # embedding in a Temporal deployment
    "PlaybookWorkflow", "ACTIVITIES", "build_worker", "hosted_worker", "sandbox_runner", "workflow_runner", "connect",
    "start_execution", "execute_playbook", "EmbeddedTemporal", "data_converter", "registration", "Registration",
    "replay_histories", "ReplayResult",
    # observing and controlling
    "read_status", "read_events", "follow_events", "open_event_store",
    # errors
    "NoetlError", "PlaybookInvalid", "TemplateError", "ConfigError", "NotFound", "InvalidTransition", "RunFailed",
    # the installed version
    "__version__", "package_version",
]

_WHERE = {
    "load_playbook": "dsl", "load_playbook_text": "dsl", "validate_text": "dsl",
    "playbook_json_schema": "dsl", "Playbook": "dsl", "Diagnostic": "dsl",
    "run": "compat", "run_async": "compat", "run_playbook": "runner", "run_with_client": "runner", "RunReport": "runner",
    "Target": "temporal.client", "connect": "temporal.client", "start_execution": "temporal.client",
    "execute_playbook": "workflow",
    "PlaybookWorkflow": "temporal.workflow", "ACTIVITIES": "temporal.activities",
    "build_worker": "temporal.worker", "hosted_worker": "temporal.hosting", "sandbox_runner": "temporal.worker",
    "workflow_runner": "temporal.worker",
    "EmbeddedTemporal": "temporal.devserver", "data_converter": "temporal.converter",
    "registration": "temporal.registration", "Registration": "temporal.registration",
    "replay_histories": "temporal.replay", "ReplayResult": "temporal.replay",
    "read_status": "observe", "read_events": "observe", "follow_events": "observe",
    "open_event_store": "store.event_store",
    "NoetlError": "errors", "PlaybookInvalid": "errors", "TemplateError": "errors", "ConfigError": "errors",
    "NotFound": "errors", "InvalidTransition": "errors", "RunFailed": "errors",
}


def package_version() -> str:
    """The installed distribution's version (``noetl-temporal --version``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("noetl-temporal")
    except PackageNotFoundError:   # imported from a source tree that is not installed
        return "0+unknown"


# perf: importing the whole package for one name (PyYAML, the loader, sqlite3 on first use) — benchmark: chain, probes.validate_speed
def __getattr__(name: str) -> Any:
    if name == "__version__":   # read on demand: importing the package stays cheap
        return package_version()
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'noetl_temporal' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
