"""How many requests the API works on at once, and a fast, clear 503 past that.

Why: each request that reads or starts an execution makes one to a few calls to Temporal
(and a catalog read takes a database connection from a thread). A burst of a thousand
requests sent them all at once, over the client's one connection: the server and the
connection fell behind, and a fifth of the requests got a 503 after waiting out a 10 s
RPC deadline ("Temporal did not answer", 12–26 s after they were sent). Now at most
``max_in_flight`` requests do their work at a time; the others wait their turn in order,
up to ``max_waiting`` of them. Past that a request is answered at once with 503 and
``Retry-After``: the service is overloaded, by design, not broken. A waiting request is
never refused later: its wait is bounded by the requests ahead of it, each of which ends
within its own deadlines (a Temporal call's 10 s at most). docs/api.md ("Under load") and docs/performance.md ("The API under a
burst") say more.

A request takes its turn after its body was read (FastAPI reads the body before it solves
dependencies), so a slow client holds no turn while it sends; the body has its own
deadline (``limits.BodyLimit``). ``/health``, ``/ready`` and the event stream (open for
as long as the client reads) take no turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import Request

from noetl_temporal.errors import NoetlError

__all__ = ["Admission", "Overloaded", "admitted", "DEFAULT_MAX_IN_FLIGHT", "DEFAULT_MAX_WAITING", "RETRY_AFTER_S"]

#: requests worked on at once (each makes one to a few Temporal calls); Temporal serves
#: concurrent calls faster than one after another (it batches its writes), so this is not small
DEFAULT_MAX_IN_FLIGHT = 256
#: requests waiting for a turn before new ones are refused at once
DEFAULT_MAX_WAITING = 2048
#: what a refused request is told to wait before it retries (seconds)
RETRY_AFTER_S = 2


class Overloaded(NoetlError):
    """The API has more requests than it takes at once and waiting: a 503 with Retry-After."""

    def __init__(self, message: str, retry_after_s: int = RETRY_AFTER_S) -> None:
        super().__init__(message, fix=f"retry after {retry_after_s} s (the Retry-After header)")
        self.retry_after_s = retry_after_s


class Admission:
    """Turns for requests: ``max_in_flight`` at a time, ``max_waiting`` in line, first come first served."""

    def __init__(self, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, max_waiting: int = DEFAULT_MAX_WAITING) -> None:
        if max_in_flight < 1 or max_waiting < 0:
            raise ValueError("max_in_flight must be >= 1 and max_waiting >= 0")
        self.max_in_flight, self.max_waiting = max_in_flight, max_waiting
        self.in_flight = 0
        self.waiting = 0
        self._turns: asyncio.Semaphore | None = None

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Wait for a turn (or raise :class:`Overloaded`), hold it while the caller works."""
        turns = self._turns
        if turns is None:
            turns = self._turns = asyncio.Semaphore(self.max_in_flight)
        if turns.locked() or self.waiting:
            if self.waiting >= self.max_waiting:
                raise Overloaded(f"the API is at capacity ({self.in_flight} requests in progress, "
                                 f"{self.waiting} waiting)")
            self.waiting += 1
            try:
                await turns.acquire()
            finally:
                self.waiting -= 1
        else:
            await turns.acquire()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            turns.release()


async def admitted(request: Request) -> AsyncIterator[None]:
    """The dependency every working route takes: a turn from the app's :class:`Admission`."""
    async with request.app.state.admission.turn():
        yield
