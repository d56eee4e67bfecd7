"""Fixtures for the store tests, each defined once where it began: the tool tests' ``call``
(the result tool reads the store) and their shared HTTP clients closed at the end
(tests/tools/conftest.py); a reachable PostgreSQL and a schema of the test's own
(tests/api/conftest.py)."""

from tests.api.conftest import pg_dsn, pg_schema  # noqa: F401  (fixtures)
from tests.tools.conftest import _close_http_clients, call  # noqa: F401  (fixtures)
