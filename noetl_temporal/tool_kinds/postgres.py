"""``kind: postgres`` (tools/postgres.py): SQL on PostgreSQL, credentials from the keychain."""

from .declaration import Credentials, Setting, ToolKind
from .python import SCRIPT, TIMEOUT
from .sql import AUTOCOMMIT, PARAMS, STATEMENTS

POSTGRES = ToolKind(
    kind="postgres",
    summary="runs SQL on PostgreSQL",
    settings=(
        Setting("auth", ("string", "mapping"), "the name of a keychain entry (docs/keychain.md)"),
        Setting("dsn", ("string", "mapping"), "only from a keychain template (`\"{{ keychain.pg.dsn }}\"`)",
                aliases=("connection",)),
        STATEMENTS,
        SCRIPT,
        PARAMS,
        AUTOCOMMIT,
        TIMEOUT,
    ),
    required=(("command", "script"),),
    ignored={"credential": "NoETL's older name for the connection; write `auth: <keychain entry>`",
             "pool": "each task opens its own connection; pool settings do not apply"},
    # `auth: <entry>` names the connection; a DSN written in the playbook would land in
    # workflow history, so `dsn`/`connection` only come from keychain templates
    credentials=Credentials(auth="auth", connection=("dsn", "connection")),
)
