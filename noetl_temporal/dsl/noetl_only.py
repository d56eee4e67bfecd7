"""NoETL constructs noetl-temporal does not run, each with what to write instead.

NoETL (the 5.x Rust engine) has tool kinds and blocks that the v10 documents do not. A
user who brings such a playbook should read that the thing is NoETL's, that it does not
run here, and what to write instead, not "unknown kind" as if it were a typo. The passes
that meet these names (``tasks``, ``normalize``) look them up here; the codes stay theirs.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NOETL_TOOL_KINDS", "SERVICE_KIND_CODES", "NOETL_ROOT_KEYS", "NOETL_STEP_KEYS",
           "tool_kind_message"]

#: NoETL tool kind -> (what it does in NoETL, what to use here instead)
NOETL_TOOL_KINDS: Mapping[str, tuple[str, str]] = {
    "snowflake": ("it queries Snowflake, a cloud warehouse this runtime has no account for",
                  "query Snowflake from a `python` task with the snowflake-connector-python package, "
                  "credentials from the keychain"),
    "ducklake": ("it reads and writes DuckLake tables through NoETL's lake service (a catalog database "
                 "and the DuckLake extension fetched from DuckDB's extension repository), which this "
                 "runtime does not run",
                 "use `kind: duckdb` and attach the lake in SQL (`INSTALL ducklake; "
                 "ATTACH 'ducklake:<catalog>' AS lake`)"),
    "container": ("it runs a container image as a Kubernetes Job, and this runtime has no Kubernetes "
                  "cluster to submit it to",
                  "start the container from a `shell` task (`docker run ...` or `kubectl ...`); "
                  "`noetl-temporal run --dry-run` prints the Kubernetes Job NoETL would submit"),
    "script": ("it runs a script fetched from object storage as a Kubernetes job",
               "run the code in a `python` task, or the script in a `shell` task"),
    "agent": ("it hands the task to NoETL's AI agent framework (retired in NoETL itself)",
              "call the model's API with an `http` task, or run a sub-playbook with `kind: playbook`"),
}

#: the kinds refused because they need a service this runtime cannot reach, each with its own
#: code so a fates table (docs/noetl-e2e-fates.md) tells a missing service from a missing
#: tool: NTL320 stays for the kinds with something local to write instead
SERVICE_KIND_CODES: Mapping[str, str] = {"snowflake": "NTL336", "ducklake": "NTL337", "container": "NTL338"}

#: root keys NoETL reads and noetl-temporal does not -> the fix
NOETL_ROOT_KEYS: Mapping[str, str] = {
    "tracing": "remove it: noetl-temporal traces through OpenTelemetry turned on for the worker "
               "(`--tracing` or `NOETL_TRACING=1`, the usual `OTEL_*` variables; docs/observability.md), "
               "not per playbook",
}

#: step keys NoETL reads and noetl-temporal does not -> the fix
NOETL_STEP_KEYS: Mapping[str, str] = {
    # step `output:` is read here now (dsl/tasks.py, `step_output`); the table stays for the next one
}


def tool_kind_message(kind: str) -> tuple[str, str, str]:
    """(code, message, fix) for a NoETL tool kind of :data:`NOETL_TOOL_KINDS`."""
    what, instead = NOETL_TOOL_KINDS[kind]
    code = SERVICE_KIND_CODES.get(kind, "NTL320")
    return code, f"kind {kind!r} is a NoETL tool that noetl-temporal does not run: {what}", instead

