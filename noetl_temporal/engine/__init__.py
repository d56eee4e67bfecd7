"""The pure interpreter: ``step(state, input) -> (state, commands)``.

No Temporal, no I/O, no clock (``tests/test_architecture.py``). The workflow shell feeds it
inputs (``messages``) and carries out its commands; tasks' outcomes and the run's output
travel as the typed envelopes of ``envelopes``.
"""

from .behaviours import CURRENT as CURRENT_BEHAVIOURS
from .envelopes import Attempt, ErrorInfo, Outcome, RunOutput, TaskResult
from .machine import new_state, step
from .messages import Command, Input
from .state import ExecutionState

__all__ = ["step", "new_state", "ExecutionState", "Input", "Command",
           "Outcome", "ErrorInfo", "Attempt", "TaskResult", "RunOutput", "CURRENT_BEHAVIOURS"]
