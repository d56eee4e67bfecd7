"""``python -m noetl_temporal.cli``: the same as the ``noetl-temporal`` executable."""

from .main import console

console()
