"""The workflow sandbox our workers offer: the SDK's default restrictions, plus the pure
modules shared with it instead of re-imported per run.

Its own module so that both the worker (``worker.py``) and what a worker registers
(``registration.py``) use it without importing each other.
"""

from __future__ import annotations

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

__all__ = ["PASSTHROUGH_MODULES", "sandbox_runner"]


# Pure, deterministic modules shared with the sandbox instead of re-imported per run.
# jinja2 creates a lock at import and fails inside the sandbox; our own engine modules
# hold no clock, randomness or I/O (tests/test_architecture.py checks the engine, and that
# only it and the pure parts it may import are listed here).
PASSTHROUGH_MODULES = (
    "jinja2", "markupsafe", "pydantic", "pydantic_core", "annotated_types", "typing_extensions",
    "noetl_temporal.templates", "noetl_temporal.templates.limits", "noetl_temporal.templates.undefined",
    "noetl_temporal.templates.text", "noetl_temporal.errors", "noetl_temporal.engine.status_layers",
    "noetl_temporal.dsl.models", "noetl_temporal.engine",
    # the tracing interceptor's workflow side (only used when tracing is on)
    "opentelemetry",
)


def sandbox_runner() -> SandboxedWorkflowRunner:
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES))
