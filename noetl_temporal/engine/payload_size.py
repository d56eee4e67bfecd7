"""How much an execution's request payload may hold: ``MAX_PAYLOAD_SIZE`` characters or items.

The payload is the workflow's input: the workflow decodes it inside its first activation,
where Temporal's deadlock detector allows 2 s. A payload of 10,000,000 items (88 MB of JSON)
could not be decoded in time, so the execution stayed PENDING forever, ignoring cancel, with
the worker holding 2.9 GB. So the payload is measured where it enters (the CLI's
``--payload``/``--set``, the API's ``POST /executions``, ``start_execution``) and refused
with its size and the limit. 2,000,000 items of small values is about 15 MB of JSON and
decodes in about 0.2 CPU-s; larger data goes by reference (a file, a table, a URL) that a
task reads.

Measured as the ctx is (``templates.limits.weight``: a string counts its characters, a
container its items and what they hold), and the walk stops once past the limit.
"""

from __future__ import annotations

from typing import Any

from ..templates.limits import weight

__all__ = ["MAX_PAYLOAD_SIZE", "PAYLOAD_FIX", "payload_refusal"]

MAX_PAYLOAD_SIZE = 2_000_000

PAYLOAD_FIX = ("pass large data by reference (a file path, a table, a URL) and read it in a task; "
               "keep the payload to parameters")


def payload_refusal(payload: Any, where: str = "the payload") -> str | None:
    """The error when ``payload`` is over ``MAX_PAYLOAD_SIZE``, else None."""
    if not payload:
        return None
    size = weight(payload, MAX_PAYLOAD_SIZE + 1, paid=False)
    if size <= MAX_PAYLOAD_SIZE:
        return None
    return (f"{where} holds more than {MAX_PAYLOAD_SIZE:,} characters or items (limit MAX_PAYLOAD_SIZE: "
            "the workflow decodes its input inside one activation, which Temporal fails after 2 s)")
