"""The fate of every file of NoETL's e2e fixture set (tests/corpus/noetl-e2e) here.

``docs/noetl-e2e-fates.md`` is generated from :func:`markdown`
(``python -m tests.dsl.e2e_fates > docs/noetl-e2e-fates.md``); tests/dsl/test_e2e_fates.py
keeps the page equal to what validation says today, so a file whose fate changes (a
playbook that starts or stops validating, or is refused for another reason) fails the test
until the page is regenerated and the change reviewed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from noetl_temporal.dsl import Diagnostic, validate_file
from tests.support.corpus import NOETL_E2E

E2E = NOETL_E2E  # copied into tests/corpus (tests/corpus/README.md)
P = "fixtures/playbooks/"
CONFIG = E2E / "fixtures" / "playbook_test_config.yaml"

# Files of the set that are not playbooks, and what they are.
NOT_PLAYBOOKS = {
    "LICENSE": "the fixture set's licence (Apache-2.0)",
    "README.md": "where the set comes from",
    "fixtures/REGRESSION_TESTING.md": "NoETL's notes on its regression runner",
    "fixtures/playbook_test_config.yaml": "the outcomes NoETL's regression runner expects (last column)",
}


@dataclass(frozen=True)
class Fate:
    path: str  # relative to tests/corpus/noetl-e2e
    valid: bool | None  # None: not a playbook
    errors: tuple[Diagnostic, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()
    note: str = ""

    @property
    def codes(self) -> list[str]:
        return sorted({d.code for d in self.errors})

    def label(self) -> str:
        if self.valid is None:
            return "not a playbook"
        if self.valid:
            return "valid" + (f" (warns {', '.join(sorted({d.code for d in self.warnings}))})"
                              if self.warnings else "")
        return "rejected"

    def reasons(self) -> list[str]:
        """Each distinct error message once, with the line it is first reported at and a count."""
        seen: dict[tuple[str, str], list[Diagnostic]] = {}
        for d in self.errors:
            seen.setdefault((d.code, d.message), []).append(d)
        out = []
        for (code, message), found in seen.items():
            times = f" ({len(found)}×)" if len(found) > 1 else ""
            out.append(f"{code} line {found[0].line}: {message}{times}")
        return out


def playbook_files() -> list[Path]:
    return sorted(p for p in (E2E / "fixtures").rglob("*.yaml") if p != CONFIG)


def fates() -> list[Fate]:
    out = [Fate(name, None, note=note) for name, note in NOT_PLAYBOOKS.items()]
    for path in playbook_files():
        found = validate_file(path)
        errors = tuple(d for d in found if d.is_error)
        warnings = tuple(d for d in found if not d.is_error)
        out.append(Fate(path.relative_to(E2E).as_posix(), not errors, errors, warnings))
    return sorted(out, key=lambda f: f.path)


def expected_by_noetl() -> dict[str, str]:
    """fixture path (relative to the set) -> the execution status NoETL's runner expects."""
    config: dict[str, Any] = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    out = {}
    for entry in config["playbooks"]:
        status = (entry.get("validation") or {}).get("execution_status", "?")
        enabled = "" if entry.get("enabled", True) else " (disabled)"
        out[f"{entry['path']}.yaml"] = f"{status}{enabled}"
    return out


# ---------------------------------------------------------------------------------------------
# What NoETL's own runtime does with each file refused here, and whether this machine could run
# it. The evidence is NoETL's source (github.com/noetl/noetl, read at commit 3badb77a), file and
# function; "could run here" means every service the run needs is a local one this project tests
# with (docs/noetl-e2e-runs.md, kind `local`). A file NoETL runs and that could run here must not
# be refused: the count of those is on the page and tests/dsl/test_e2e_fates.py keeps it at the
# files it lists as pending (work in progress elsewhere).

_SRC = "noetl/noetl@3badb77a "
_PARSER = _SRC + "noetl/core/dsl/engine/parser/validation.py `_validate_step_v10`"
_EXEC_PY = _SRC + "noetl/tools/python/executor.py `execute_python_task_async`"
_RETRY_IGNORED = (
    "NoETL accepts it and ignores the tool's `retry:` mapping: `ToolSpec` takes any key "
    "(noetl/core/dsl/engine/models/tools.py, `extra = \"allow\"`), and the worker reads a tool's `retry` "
    "only as a list of pagination policies for http (noetl/worker/nats_worker.py `_execute_tool`); "
    "nothing else reads it (" + _SRC.strip() + ")")

_STEP_OUTPUT = (
    "NoETL runs it and drops the step's `output:` block: its v10 `Step` model has no `output` field "
    "(\"Legacy fields (output, result, vars) removed in v10\") and ignores unknown keys "
    "(" + _SRC + "noetl/core/dsl/engine/models/workflow.py `Step`)")


@dataclass(frozen=True)
class OnNoetl:
    runs: bool      # NoETL's runtime accepts the file and runs it (given the services it names)
    here: bool      # every service that run needs is a local one this machine has
    evidence: str   # why: NoETL's source (file and function), or what the run needs


def _no_tool_on_a_step(step: str, besides: str = "") -> OnNoetl:
    return OnNoetl(False, False, f"NoETL refuses it: step '{step}' has no `tool`, and NoETL's parser raises "
                                 f"\"Missing 'tool' field\" ({_PARSER}, called by `DSLParser.parse`){besides}")


def _top_level_return() -> OnNoetl:
    return OnNoetl(False, False, "NoETL accepts it and its python step fails: the code is run as written, "
                                 "`exec(code, ...)`, not wrapped in a function, so a top-level `return` is "
                                 f"SyntaxError 'return' outside function and the task ends in error ({_EXEC_PY}); "
                                 "refusing it at validation is the same answer, earlier")


def _spec_settings(needs: str) -> OnNoetl:
    return OnNoetl(False, False, "NoETL accepts it (its parser reads only `policy` under a task's `spec:`: "
                                 f"{_SRC}noetl/core/dsl/engine/parser/validation.py `_validate_task_spec_v10`) and "
                                 "its first task fails: the tools read their settings beside `kind:`, so a python "
                                 "task with its code under `spec:` raises \"No code provided\" "
                                 f"({_EXEC_PY}) and a http task has no url (noetl/tools/http/executor.py "
                                 f"`execute_http_task` reads `url`/`endpoint`/`method` from the task itself); "
                                 f"its http tasks also need {needs}")


def _elsewhere(evidence: str) -> OnNoetl:
    """NoETL runs it; a service it needs (a cloud account, a cluster, a broker ...) is not on this machine."""
    return OnNoetl(True, False, evidence)


ON_NOETL: dict[str, OnNoetl] = {
    P + "api_integration/amadeus_ai_api/amadeus_ai_api.yaml": _elsewhere(
        _RETRY_IGNORED + "; it needs the Amadeus and OpenAI APIs (accounts)"),
    P + "broken_playbooks/should_error_tool_is_required.yaml": _no_tool_on_a_step("end"),
    P + "broken_sql.yaml": _top_level_return(),
    P + "duckdb_test.yaml": _top_level_return(),
    P + "loop_test.yaml": _top_level_return(),
    P + "postgres_test.yaml": _top_level_return(),
    P + "container_callback_happy_path/container_callback_happy_path.yaml": _elsewhere(
        "NoETL runs `kind: container` as a Kubernetes Job (noetl/tools/container/job.py); no cluster here"),
    P + "container_callback_oom/container_callback_oom.yaml": _elsewhere(
        "NoETL runs `kind: container` as a Kubernetes Job (noetl/tools/container/job.py); no cluster here"),
    P + "container_postgres_init/container_postgres_init.yaml": _elsewhere(
        "NoETL runs `kind: container` as a Kubernetes Job (noetl/tools/container/job.py); no cluster here"),
    P + "data_transfer/http_to_databases/http_to_databases.yaml": _elsewhere(
        "NoETL runs it with a Snowflake account (noetl/tools/snowflake) and its lake service (noetl/tools/ducklake)"),
    P + "data_transfer/snowflake_postgres/snowflake_postgres.yaml": _elsewhere(
        "NoETL runs it with a Snowflake account (noetl/tools/snowflake)"),
    P + "load_test/tooling_non_blocking/tooling_non_blocking.yaml": _elsewhere(
        "NoETL runs it with a Snowflake account (noetl/tools/snowflake)"),
    P + "ducklake_test/playbook.yaml": _elsewhere(
        "NoETL runs it through its lake service (noetl/tools/ducklake) with DuckDB's DuckLake extension, "
        "downloaded from DuckDB's extension repository: no internet here"),
    P + "deployment/deploy_gateway_kind.yaml": _elsewhere(
        "NoETL runs it and takes every arc, ignoring `cond:` (noetl/core/dsl/engine/models/workflow.py `Arc` has "
        "no `cond` field and drops unknown keys); it needs a Docker daemon and Kind to build a cluster: neither "
        "runs here"),
    P + "examples/http_pagination_v2.yaml": _spec_settings("api.example.com, which does not resolve"),
    P + "examples/simple_http.yaml": _spec_settings("httpbin.org (internet)"),
    P + "examples/variable_lifecycle_example.yaml": _spec_settings("api.example.com, which does not resolve"),
    P + "examples/weather_loop.yaml": _spec_settings("api.open-meteo.com (internet)"),
    P + "test_gcs_storage.yaml": _elsewhere(_STEP_OUTPUT + "; it writes to Google Cloud Storage (`kind: gcs`)"),
    P + "regression_test/master_regression_test.yaml": _elsewhere(
        _RETRY_IGNORED + "; its sub-playbooks need internet and cloud services (open-meteo, OpenAI, GCS)"),
    P + "regression_test/master_regression_test_parallel.yaml": _elsewhere(
        _RETRY_IGNORED + "; its sub-playbooks need cloud services (Snowflake, GCS, Google OAuth)"),
    P + "script_execution/k8s_job_python_gcs.yaml": _elsewhere(
        "NoETL runs `kind: script` as a Kubernetes Job (noetl/tools/script/__init__.py `execute_script_task`) "
        "on a script from GCS: no cluster and no GCS here"),
    P + "script_execution/python_gcs_example.yaml": _elsewhere(
        "NoETL loads the script from Google Cloud Storage with GCP credentials (noetl/tools/container/loader.py)"),
    P + "spike/spike_e2e_test.yaml": _no_tool_on_a_step(
        "end", "; its `kind: agent` step would also need NoETL's server and an MCP/AI backend "
               "(noetl/tools/agent/executor.py)"),
    P + "spike/spike_failing_subflow.yaml": _no_tool_on_a_step(
        "end", "; NoETL's http tool would not read its `timeout_seconds` either: it reads `timeout` "
               "(noetl/tools/http/executor.py `execute_http_task`)"),
    P + "subscription/subscription_kafka_drain.yaml": _elsewhere(
        "NoETL's subscription tool (its Rust worker: packaging/pypi/Cargo.lock pulls the `kafka` crate) polls a "
        "Kafka broker; none runs here"),
    P + "subscription/subscription_pubsub_drain.yaml": _elsewhere(
        "NoETL's subscription tool (its Rust worker) polls Google Cloud Pub/Sub; no account, and the gcloud SDK here has no "
        "pubsub-emulator component"),
}


def refused_though_noetl_runs_it_here() -> list[str]:
    """Rejected files that NoETL runs and whose services all exist here: the issue's count."""
    return sorted(f.path for f in fates() if f.valid is False
                  and ON_NOETL[f.path].runs and ON_NOETL[f.path].here)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    table = fates()
    expected = expected_by_noetl()
    blocked = refused_though_noetl_runs_it_here()
    playbooks = [f for f in table if f.valid is not None]
    valid = [f for f in playbooks if f.valid]
    by_code: dict[str, int] = {}
    for f in playbooks:
        for code in f.codes:
            by_code[code] = by_code.get(code, 0) + 1
    lines = [
        "# NoETL's e2e fixtures: the fate of every file",
        "",
        "Every file of NoETL's own fixture set (`tests/corpus/noetl-e2e`, copied from the public",
        "`noetl/e2e` repository) and what `noetl-temporal validate` does with it: the playbook",
        "validates, or it is rejected with located errors that name the reason. The reasons are",
        "v10 rules (`retry` blocks, a step without a tool: the errors say what to write instead)",
        "and NoETL constructs this project does not run: tools that need a service this machine",
        "cannot have (`snowflake` NTL336, `ducklake` NTL337, `container` NTL338), result tiers on a",
        "cloud (`output.store.kind: gcs` NTL343, `s3` NTL344), other NoETL tools (NTL320), root `tracing`,",
        "each with its fix. See docs/validation-codes.md for the codes.",
        "",
        "This page is generated (`python -m tests.dsl.e2e_fates > docs/noetl-e2e-fates.md`) and",
        "`tests/dsl/test_e2e_fates.py` fails when a file's fate changes.",
        "",
        f"{len(playbooks)} playbooks: {len(valid)} valid, {len(playbooks) - len(valid)} rejected. "
        "Files rejected per code: " + ", ".join(f"{c} {n}" for c, n in sorted(by_code.items())) + ".",
        "",
        "For each rejected file, what NoETL's own runtime does with it (NoETL runs it: it accepts the file",
        "and its run does what the playbook says, given the services it names; \"no\" when NoETL refuses the",
        "file or its run fails on the construct refused here) and whether every service that run needs is a",
        "local one this machine has (could run here), with the evidence: NoETL's source, file and function,",
        "or what the run needs. "
        f"**Refused although NoETL runs it and it could run here: {len(blocked)}**"
        + (" (" + ", ".join(f"`{p.removeprefix(P)}`" for p in blocked) + ": work in progress, listed as "
           "pending in tests/dsl/test_e2e_fates.py)." if blocked else "."),
        "",
        "The column \"NoETL expects\" is the execution status NoETL's regression runner expects",
        "(`fixtures/playbook_test_config.yaml`), for the files it runs.",
        "",
        "| file | fate | codes | reason | NoETL runs it | could run here | evidence | NoETL expects |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in table:
        reason = "; ".join(f.reasons()) if f.errors else f.note
        on = ON_NOETL.get(f.path) if f.valid is False else None
        noetl = [_yes(on.runs), _yes(on.here), _cell(on.evidence)] if on else ["", "", ""]
        lines.append(f"| `{f.path}` | {f.label()} | {', '.join(f.codes)} | {_cell(reason)} | "
                     + " | ".join(noetl) + f" | {expected.get(f.path, '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
