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
    "load_playbook": ".dsl", "load_playbook_text": ".dsl", "validate_text": ".dsl",
    "playbook_json_schema": ".dsl", "Playbook": ".dsl", "Diagnostic": ".dsl",
    "run": ".client.compat", "run_async": ".client.compat", "run_playbook": ".client.end_to_end", "run_with_client": ".client.end_to_end", "RunReport": ".client.end_to_end",
    "Target": ".client.connect", "connect": ".client.connect", "start_execution": ".client.connect",
    "execute_playbook": ".workflow",
    "PlaybookWorkflow": ".workflow.playbook_workflow", "ACTIVITIES": ".workflow.activities",
    "build_worker": ".hosting.worker", "hosted_worker": ".hosting.lifecycle", "sandbox_runner": ".hosting.sandbox",
    "workflow_runner": ".hosting.worker",
    "EmbeddedTemporal": ".client.devserver", "data_converter": ".conversion.converter",
    "registration": ".hosting.registration", "Registration": ".hosting.registration",
    "replay_histories": ".hosting.replay", "ReplayResult": ".hosting.replay",
    "read_status": ".client.observe", "read_events": ".client.observe", "follow_events": ".client.observe",
    "open_event_store": ".store.event_store",
    "NoetlError": ".errors", "PlaybookInvalid": ".errors", "TemplateError": ".errors", "ConfigError": ".errors",
    "NotFound": ".errors", "InvalidTransition": ".errors", "RunFailed": ".errors",
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
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
