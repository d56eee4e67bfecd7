"""Worker entry points (``python -m workers.main`` or ``noetl-temporal worker``)."""
