"""The noetl-temporal REST service (FastAPI): ``create_app(Settings(...))``.

Run it with ``noetl-temporal api`` (an existing Temporal) or ``noetl-temporal dev``
(embedded Temporal with its UI, a worker and this API in one process).
"""

from .app import create_app
from .settings import Settings

__all__ = ["create_app", "Settings"]
