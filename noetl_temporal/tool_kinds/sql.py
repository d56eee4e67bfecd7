"""The settings the SQL kinds share (tools/_sql.py)."""

from .declaration import Setting

STATEMENTS = Setting("command", ("string", "list"), "the SQL: one string (one or more `;`-separated "
                                                    "statements) or a list run in order",
                     aliases=("query", "sql", "commands"))
PARAMS = Setting("params", ("list", "mapping"), "parameters of a single statement")
AUTOCOMMIT = Setting("autocommit", ("boolean", "string"), "default false: one transaction")
