"""``kind: transfer`` (tools/transfer.py): rows from a source to a target table, in batches."""

from .declaration import Credentials, Setting, ToolKind
from .python import TIMEOUT

#: the endpoint types a transfer reads from and writes to (``source.type`` / ``target.type``)
SOURCE_TYPES = ("postgres", "duckdb", "http", "file")
TARGET_TYPES = ("postgres", "duckdb", "file")
MODES = ("append", "replace", "upsert")

TRANSFER = ToolKind(
    kind="transfer",
    summary="copies rows from a source (postgres, duckdb, http, file) to a target table or file, in batches",
    settings=(
        Setting("source", ("mapping",), "`type:` postgres (`auth`, `query`), duckdb (`database`/`connection`, "
                                        "`query`), http (`url`, `method`, `headers`, `params`, `data_path`) "
                                        "or file (`path`, `format`: jsonl, json or csv)"),
        Setting("target", ("mapping",), "`type:` postgres (`auth`, `table`), duckdb (`database`/`connection`, "
                                        "`table`) or file (`path`, `format`: jsonl or csv); `mapping: "
                                        "{target_column: source_field}` picks and renames columns"),
        Setting("chunk_size", ("integer", "string"), "rows per batch (default 1000): at most one batch is "
                                                     "held in memory", aliases=("batch_size",)),
        Setting("mode", ("string",), "`append` (default), `replace` (empty the table first, in the same "
                                     "transaction) or `upsert` (needs `target.key: [columns]`)", choices=MODES),
        TIMEOUT,
    ),
    required=(("source",), ("target",)),
    # each endpoint of type postgres names its own keychain entry (`source.auth`, `target.auth`);
    # a DSN written in the playbook would land in workflow history, as for `kind: postgres`
    credentials=Credentials(auth="auth", connection=("dsn", "connection"), within=("source", "target"),
                            within_types=("postgres",)),
)
