"""A playbook's own closing failures carry their headline, not a stack trace.

A FAILED playbook closes its workflow with an ``ApplicationError`` (``PlaybookFailed``,
``playbook_result.py``) whose message names the step and the error; an engine error with
``NoetlEngineError``. Their Python traceback holds only the SDK's frames and the line that
raises them, which the Temporal UI shows under the message as a long stack trace telling
the reader nothing. The failure converter here keeps the user's converter and leaves the
stack trace out of those two types only: every other failure (a tool's, a user's
workflow's) keeps its trace.
"""

from __future__ import annotations

from temporalio.api.failure.v1 import Failure
from temporalio.converter import FailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError

from .playbook_result import PLAYBOOK_FAILED

__all__ = ["HEADLINE_TYPES", "without_headline_stacks"]

#: the ApplicationError types a playbook workflow closes with, whose trace is noise
HEADLINE_TYPES = frozenset({PLAYBOOK_FAILED, "NoetlEngineError"})


def without_headline_stacks(user_class: type[FailureConverter]) -> type[FailureConverter]:
    """The user's failure converter class, leaving out the stack of our closing failures."""
    if getattr(user_class, "_noetl_headlines", False):
        return user_class   # already wrapped: data_converter() applied twice

    class HeadlineFailures(user_class):  # type: ignore[valid-type,misc]
        _noetl_headlines = True

        def to_failure(self, exception: BaseException, payload_converter: PayloadConverter,
                       failure: Failure) -> None:
            if isinstance(exception, ApplicationError) and exception.type in HEADLINE_TYPES:
                # Before the conversion, not after: a converter that encodes the message and
                # stack into encoded attributes would keep a copy of the trace.
                exception.__traceback__ = None
            super().to_failure(exception, payload_converter, failure)

    HeadlineFailures.__name__ = HeadlineFailures.__qualname__ = f"{user_class.__name__}WithHeadlines"
    return HeadlineFailures
