"""``kind: duckdb`` (tools/duckdb.py): SQL on an embedded DuckDB database."""

from .declaration import Setting, ToolKind
from .python import TIMEOUT
from .sql import AUTOCOMMIT, PARAMS, STATEMENTS

DUCKDB = ToolKind(
    kind="duckdb",
    summary="runs SQL on DuckDB",
    settings=(
        Setting("database", ("string",), "a file path (relative to the task's workdir) or `:memory:` "
                                         "(default)", aliases=("db",)),
        STATEMENTS,
        PARAMS,
        Setting("read_only", ("boolean", "string"), "default false"),
        AUTOCOMMIT,
        TIMEOUT,
    ),
    required=(("command",),),
    ignored={"auth": "no credentials are attached from `auth`; create secrets in SQL with keychain templates",
             "gcs_credential": "no credentials are attached; create a GCS secret in SQL with keychain "
                               "templates"},
)
