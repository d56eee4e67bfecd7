"""A worker's fixed memory: what importing the worker module loads (issue 30).

Every module a worker imports stays resident in it for its whole life, whether a playbook
needs it or not. These were cut from a plain worker import (about 1.2 MiB of RSS, 35
modules): PyYAML and the playbook loader (a worker receives parsed playbooks; only the
keychain's credentials file and the loader parse YAML), the JSON Schema builder, and
``sqlite3`` (about 0.9 MiB more; loaded when a SQLite event store opens, so only a worker
whose events go to Postgres is spared it). They are imported where they are used.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

#: loaded on first use only, never by ``import noetl_temporal.hosting.worker``
LAZY = ("yaml", "noetl_temporal.dsl.loader", "noetl_temporal.dsl.yaml_loader", "noetl_temporal.dsl.schema",
        "sqlite3")


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(m for m in {LAZY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    return out.stdout.split()


def test_importing_the_worker_loads_none_of_them() -> None:
    loaded = _loaded_after("import noetl_temporal.hosting.worker")
    assert loaded == [], f"importing the worker module loads {loaded} (import them where they are used)"


def test_they_still_load_where_they_are_used() -> None:
    # The probe itself must see the modules when they are used, or the test above proves nothing.
    loaded = _loaded_after("from noetl_temporal.dsl import load_playbook_text, playbook_json_schema\n"
                           "from noetl_temporal.store.event_store import SqliteEventStore\n"
                           "SqliteEventStore(':memory:')")
    assert loaded == list(LAZY)
