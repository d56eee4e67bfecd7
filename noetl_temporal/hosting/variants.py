"""The playbook workflow as each kind of worker registers it: sandboxed or not, versioned or not.

``PlaybookWorkflow`` runs outside the SDK's sandbox per workflow (``workflow.py`` says why),
so a worker hosting the user's workflows beside ours keeps theirs sandboxed. The variants
here are the same workflow under the same name (``registration`` picks one):

* **sandboxed** (``registration(sandboxed=True)``, ``NOETL_WORKFLOW_SANDBOX=1``): run by the
  worker's sandboxed runner like any workflow code.
* **versioned** (a worker with ``WorkerDeploymentConfig(use_worker_versioning=True)``):
  declares ``AUTO_UPGRADE``. Every interpreter change is replay-guarded
  (``workflow.patched``, ``engine/behaviours.py``), so an open execution may move to the
  newest worker version at its next task; ``PINNED`` would keep old versions alive until
  their longest executions drain, for no safety gained. Only versioned workers may declare
  a behaviour (the server refuses it from an unversioned one), hence separate classes.

The sandbox re-imports this module for every run, so it stays this small.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import VersioningBehavior

from ..workflow.playbook_workflow import PlaybookWorkflow

# Imported, not passed through: inside the sandbox the workflow module is re-imported and
# restricted like any workflow code (the pure modules it passes through are in worker.py).
from ..workflow.types import WORKFLOW_NAME, RunInput

__all__ = ["SandboxedPlaybookWorkflow", "VersionedPlaybookWorkflow", "SandboxedVersionedPlaybookWorkflow",
           "playbook_workflow", "VERSIONING_BEHAVIOR"]

#: what a versioned worker declares for playbook workflows (see above)
VERSIONING_BEHAVIOR = VersioningBehavior.AUTO_UPGRADE


@workflow.defn(name=WORKFLOW_NAME, sandboxed=True)
class SandboxedPlaybookWorkflow(PlaybookWorkflow):
    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        return await super().run(inp)


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False, versioning_behavior=VERSIONING_BEHAVIOR)
class VersionedPlaybookWorkflow(PlaybookWorkflow):
    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        return await super().run(inp)


@workflow.defn(name=WORKFLOW_NAME, sandboxed=True, versioning_behavior=VERSIONING_BEHAVIOR)
class SandboxedVersionedPlaybookWorkflow(PlaybookWorkflow):
    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        return await super().run(inp)


def playbook_workflow(*, sandboxed: bool, versioned: bool) -> type:
    """The class a worker registers: ``sandboxed`` by its runner, ``versioned`` worker."""
    if sandboxed:
        return SandboxedVersionedPlaybookWorkflow if versioned else SandboxedPlaybookWorkflow
    return VersionedPlaybookWorkflow if versioned else PlaybookWorkflow
