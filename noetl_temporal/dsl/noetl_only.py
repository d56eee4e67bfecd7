"""NoETL constructs noetl-temporal does not run, each with what to write instead.

NoETL (the 5.x Rust engine) has tool kinds and blocks that the v10 documents do not. A
user who brings such a playbook should read that the thing is NoETL's, that it does not
run here, and what to write instead, not "unknown kind" as if it were a typo. The passes
that meet these names (``tasks``, ``normalize``) look them up here; the codes stay theirs.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NOETL_TOOL_KINDS", "NOETL_ROOT_KEYS", "NOETL_STEP_KEYS",
           "tool_kind_message"]

#: NoETL tool kind -> (what it does in NoETL, what to use here instead)
NOETL_TOOL_KINDS: Mapping[str, tuple[str, str]] = {
    "snowflake": ("it queries Snowflake",
                  "query Snowflake from a `python` task with the snowflake-connector-python package, "
                  "credentials from the keychain"),
    "ducklake": ("it reads and writes DuckLake tables",
                 "use `kind: duckdb` and attach the lake in SQL (`INSTALL ducklake; "
                 "ATTACH 'ducklake:<catalog>' AS lake`)"),
    "container": ("it runs a container image as a Kubernetes job",
                  "start the container from a `shell` task (`docker run ...` or `kubectl ...`)"),
    "artifact": ("it reads results NoETL stored in its object store",
                 "large results are stored by reference already: read one back with `kind: result` "
                 "(`ref: \"{{ step_name }}\"`)"),
    "transfer": ("it copies rows between two connections",
                 "read with one task and write with the next in a `tool:` pipeline (for example "
                 "`http` then `postgres`), or copy in SQL with `kind: duckdb` and its postgres extension"),
    "script": ("it runs a script fetched from object storage as a Kubernetes job",
               "run the code in a `python` task, or the script in a `shell` task"),
    "agent": ("it hands the task to NoETL's AI agent framework (retired in NoETL itself)",
              "call the model's API with an `http` task, or run a sub-playbook with `kind: playbook`"),
}

#: root keys NoETL reads and noetl-temporal does not -> the fix
NOETL_ROOT_KEYS: Mapping[str, str] = {
    "tracing": "remove it: noetl-temporal traces through OpenTelemetry turned on for the worker "
               "(`--tracing` or `NOETL_TRACING=1`, the usual `OTEL_*` variables; docs/observability.md), "
               "not per playbook",
}

#: step keys NoETL reads and noetl-temporal does not -> the fix
NOETL_STEP_KEYS: Mapping[str, str] = {
    "output": "remove it: a large result is stored by reference on its own and keeps the fields this "
              "playbook's templates read (`{{ step.count }}` works at any size); to store sooner or elsewhere, "
              "or to keep more top-level keys, move `inline_max_bytes`, `store` and `output_select` into the "
              "task's `output:` (docs/tools.md, \"Large results\")",
}


def tool_kind_message(kind: str) -> tuple[str, str]:
    """(message, fix) for a NoETL tool kind of :data:`NOETL_TOOL_KINDS`."""
    what, instead = NOETL_TOOL_KINDS[kind]
    return f"kind {kind!r} is a NoETL tool that noetl-temporal does not run: {what}", instead

