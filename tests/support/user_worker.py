"""An embedding user's own workflow, activity and interceptor, hosted on the same worker as
the playbook workflows (``tests/hosting/test_embedding.py``; docs/deployment.md shows it)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import VersioningBehavior
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn(versioning_behavior=VersioningBehavior.PINNED)  # the user's own choice for theirs
class Greeting:
    @workflow.run
    async def run(self, name: str) -> dict[str, Any]:
        text = await workflow.execute_activity(shout, f"hello {name}", start_to_close_timeout=timedelta(seconds=10))
        # The user's workflow keeps the SDK's sandbox on a worker that also runs playbooks.
        return {"text": text, "sandboxed": workflow.unsafe.in_sandbox()}


#: activity type -> executions seen by :class:`CountingInterceptor` (all workers of the process)
SEEN: Counter[str] = Counter()


class _Counting(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        SEEN[activity.info().activity_type] += 1
        return await self.next.execute_activity(input)


class CountingInterceptor(Interceptor):
    """The user's interceptor: counts every activity the worker executes."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Counting(next)
