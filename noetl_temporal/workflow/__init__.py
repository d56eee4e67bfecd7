"""The playbook workflow and what it runs; ``execute_playbook``, the public call a user's own
workflow makes to run a playbook as its child (``execute``).

Importing this package loads only ``execute`` (workflow code, safe in the SDK's sandbox, whose
imports are light and passed through); ``PlaybookWorkflow`` and the activities load when
their modules are imported. docs/layout.md.
"""

from .execute import execute_playbook

__all__ = ["execute_playbook"]
