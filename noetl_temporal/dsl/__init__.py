"""The playbook language front end: load, normalize and validate NoETL v10 playbooks.

``load_playbook(path)`` / ``load_playbook_text(text)`` return a :class:`LoadedPlaybook`
whose ``.playbook`` is the normalized :class:`~.models.Playbook` the engine runs, or
raise :class:`~noetl_temporal.errors.PlaybookInvalid` with every located diagnostic.
``validate_text`` returns the diagnostics without raising (for CLIs and editors), and
``playbook_json_schema`` is the JSON Schema of the *source* form users write.
"""

from .diagnostics import Diagnostic
from .loader import LoadedPlaybook, load_playbook, load_playbook_text, validate_file, validate_text
from .models import Playbook
from .schema import playbook_json_schema

__all__ = [
    "Diagnostic",
    "LoadedPlaybook",
    "Playbook",
    "load_playbook",
    "load_playbook_text",
    "playbook_json_schema",
    "validate_file",
    "validate_text",
]
