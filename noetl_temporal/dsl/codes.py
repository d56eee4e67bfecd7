"""The table of validation codes: one stable code per problem a playbook can have.

Codes never change meaning once published (editors, CI scripts and docs refer to
them); a retired code is left out of the table and listed in :data:`RETIRED`, with why it is
no longer emitted, so it is never reused. ``docs/validation-codes.md`` is generated from
both by :func:`markdown` and a test keeps the two identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..tool_kinds import LOAD_TIME_KINDS, TOOL_KINDS
from .keys import ROOT_KEYS, STEP_KEYS

__all__ = ["Code", "CODES", "RETIRED", "markdown"]

# The kinds a task may name, as the fixes list them.
_KINDS = ", ".join((*TOOL_KINDS, *LOAD_TIME_KINDS))


@dataclass(frozen=True)
class Code:
    code: str
    severity: Literal["error", "warning"]
    meaning: str
    example: str
    fix: str


# Annotated so every row checks against Code.severity (a bare "error" would be a str).
_E: Literal["error", "warning"] = "error"
_W: Literal["error", "warning"] = "warning"

_TABLE: list[Code] = [
    # ------------------------------------------------------------------ reading the file
    Code("NTL001", _E, "the file does not exist", "`noetl-temporal validate missing.yaml`",
         "check the path"),
    Code("NTL002", _E, "the path is a directory, not a regular file, or cannot be read",
         "`validate ./playbooks/`", "pass a readable YAML file, not a directory"),
    Code("NTL003", _E, "the file is larger than the 5 MB limit", "a 20 MB generated playbook",
         "keep data out of the playbook: load it in a task or pass it as workload"),
    Code("NTL004", _E, "the file is binary or not UTF-8 text", "a `.xlsx` saved as `.yaml`",
         "save the playbook as UTF-8 text"),
    Code("NTL005", _E, "YAML syntax error", "`tool: {kind: python` (unclosed flow mapping)",
         "correct the YAML at the reported line and column"),
    Code("NTL006", _E, "YAML aliases expand beyond the safety limit (200,000 nodes, or 10,000,000 characters of "
                       "text or the file's length when larger), or an alias refers to itself",
         "a 'billion laughs' document of nested `*a` aliases; a 1 MB string aliased a thousand times",
         "write the data out instead of nesting anchors and aliases"),
    Code("NTL007", _E, "the document is empty", "an empty file, or one with only comments",
         "write a playbook: apiVersion, kind, metadata, workflow"),
    Code("NTL008", _E, "the top level is not a mapping", "a file that is a YAML list",
         "the playbook must be a mapping with `workflow:` and the other root sections"),
    Code("NTL009", _E, "the file holds more than one YAML document", "two playbooks separated by `---`",
         "put one playbook in each file"),
    Code("NTL010", _E, "a mapping has the same key twice", "two `next:` keys in one step",
         "remove or rename one of the keys; YAML keeps only the last one silently"),
    Code("NTL011", _E, "a YAML value has a type that JSON cannot carry", "`!!binary`, `!!set`, an unknown `!tag`",
         "use plain strings, numbers, booleans, lists and mappings"),
    Code("NTL012", _W, "a mapping key is not a string; it was converted to one",
         "`200: ok` or `on: true` (YAML 1.1 reads `on` as a boolean)", "quote the key"),
    Code("NTL013", _E, "the document nests too deeply", "thousands of nested `[[[...]]]`",
         "flatten the data"),
    # ------------------------------------------------------------------ root
    Code("NTL101", _E, "unknown root key", "`workfow:` (typo), `steps:`",
         f"use only {', '.join(ROOT_KEYS)}"),
    Code("NTL102", _E, "root `vars` is not part of v10", "`vars: {count: 0}`",
         "put inputs in `workload:`; keep changing values in `ctx` by `set: {ctx.count: 0}` on a step, "
         "task policy or arc"),
    Code("NTL103", _E, "`workflow` is missing or is not a non-empty list of steps", "`workflow: {}`",
         "add `workflow:` with a list of `- step: name` entries"),
    Code("NTL104", _E, "a section has the wrong type", "`workload: [1, 2]`, a step that is a string",
         "use the type the message names (mapping or list)"),
    Code("NTL105", _W, "unexpected `apiVersion`", "`apiVersion: noetl.io/v1`",
         "use `apiVersion: noetl.io/v2`"),
    Code("NTL106", _E, "`executor.requires` names a tool kind this worker lacks",
         "`requires: {tools: [snowflake]}`",
         "the message names the missing item and what the worker has: use those, or run the playbook "
         "where it is provided"),
    # ------------------------------------------------------------------ steps
    Code("NTL201", _E, "a step has no `step:` name, or the name is not a non-empty string",
         "`- desc: load` with no `step:`", "give every step a unique `step: <name>`"),
    Code("NTL202", _E, "two steps have the same name", "two `- step: fetch`",
         "rename one of them (arcs refer to steps by name)"),
    Code("NTL203", _E, "unknown step key", "`nxt:` (typo) on a step",
         f"use only {', '.join(STEP_KEYS)}"),
    Code("NTL204", _E, "step `when` is not part of v10", "`when: \"{{ ctx.ready }}\"` on a step",
         "use admission rules: `spec: {policy: {admit: {rules: [{when: ..., then: {allow: true}}, "
         "{else: {then: {allow: false}}}]}}}`"),
    Code("NTL205", _E, "`case` blocks are not part of v10", "`case: [{when: ..., then: ...}]`",
         "route with `next: {arcs: [{step: X, when: ...}]}`; react to task outcomes with "
         "`tool.spec.policy.rules`"),
    Code("NTL206", _E, "`retry` blocks are not part of v10", "`retry: {max_attempts: 3}`",
         "add a task policy rule: `spec: {policy: {rules: [{when: \"{{ output.status == 'error' }}\", "
         "then: {do: retry, attempts: 3}}]}}`"),
    Code("NTL207", _E, "`sink` blocks are not part of v10", "`sink: {kind: postgres, ...}`",
         "add a storage tool task (postgres, duckdb ...) to the step's `tool:` pipeline"),
    Code("NTL208", _E, "`eval` / `expr` are not part of v10", "`eval: [{expr: ..., do: retry}]`",
         "write conditions as `when:` in `spec.policy.rules[]` (tasks) or `next.arcs[]` (routing)"),
    Code("NTL209", _E, "step `type:` is not part of v10", "`type: http` on a step",
         "declare the tool: `tool: {kind: http, url: ...}`"),
    Code("NTL210", _E, "a tool setting is written directly on the step", "`command:` next to `tool:`",
         "move the key under `tool:` (or under the task in a `tool:` list)"),
    Code("NTL211", _E, "the step has no `tool`", "`- step: end` with only `desc:`",
         "add a tool; a step that only routes or ends the flow uses `tool: {kind: noop}`"),
    Code("NTL212", _E, "`spec.next_mode` is not part of v10", "`spec: {next_mode: inclusive}`",
         "use `next: {spec: {mode: inclusive}, arcs: [...]}`"),
    Code("NTL213", _E, "a step-level `set:` key has no `ctx.` prefix",
         "`set: {total: ...}` on a step", "write `ctx.total` (execution scope); for pipeline-local names or "
         "an iteration's `iter.*` use `set:` on a task"),
    Code("NTL214", _E, "an `approve` task's `fields` is not a usable form",
         "`fields: {approved: bool}`, `fields: {env: {type: string, choices: []}}`",
         "write `name: type` or `name: {type, required, choices, doc}` with types string, boolean, integer, "
         "number (docs/approvals.md)"),
    Code("NTL215", _E, "an `approve` field name cannot be used", "`fields: {answered_by: string}`, `{\"my field\": string}`",
         "use a plain name (letters, digits, _); `answered_by`, `answered_at` and `timed_out` are set by the answer"),
    Code("NTL216", _E, "an `approve` task's timeout answer does not fit", "`on_timeout: answer` without `default`; "
         "a `default` missing a required field",
         "give `default:` an answer the form accepts, or use `on_timeout: fail`"),
    Code("NTL217", _W, "an `approve` task says what a timeout does but has no `timeout`",
         "`on_timeout: answer` with no `timeout:`", "add `timeout:` (seconds), or drop `on_timeout`/`default`"),
    Code("NTL218", _E, "an `approve` task's `approvers` is not a list of names", "`approvers: [ops, 3]`",
         "list the names that may answer: `approvers: [ops, alice]`"),
    # ------------------------------------------------------------------ tools and tasks
    Code("NTL301", _E, "a tool task has no `kind`", "`tool: {url: ..., method: GET}`",
         f"add `kind:` ({_KINDS})"),
    Code("NTL302", _E, "unknown tool kind", "`kind: htttp`",
         f"use one of {_KINDS}"),
    Code("NTL303", _E, "`tool` has the wrong shape", "`tool: python`, `tool: []`",
         "write a task mapping (`tool: {kind: ...}`) or a list of tasks"),
    Code("NTL304", _E, "two tasks of one step have the same label", "two `- name: fetch` in one pipeline",
         "labels must be unique within a step (jumps and results refer to them)"),
    Code("NTL305", _E, "a task label is not a usable name", "`- name: previous`, `- name: 3`",
         "use a non-empty string; `previous` is reserved for `jump: {to: previous}`"),
    Code("NTL306", _E, "a `kind: workbook` task names no workbook entry", "`{kind: workbook, name: typo}`",
         "name an entry of the root `workbook:` list"),
    Code("NTL307", _E, "a workbook entry cannot be used", "a workbook entry without `tool.kind`",
         "give the entry `tool: {kind: ...}` (not another workbook reference)"),
    Code("NTL308", _W, "two spellings of one setting; one of them is ignored",
         "`endpoint:` and `url:` on one http task", "keep one of them"),
    Code("NTL309", _E, "a task lacks a setting its kind requires",
         "`{kind: python}` without `code`, `{kind: http}` without `url`",
         "add the setting (docs/tools.md lists each kind's settings), here or in a `spec.<kind>:` default"),
    Code("NTL310", _E, "unknown setting for this tool kind", "`{kind: http, url: ..., metod: POST}`",
         "correct the spelling or remove the key; docs/tools.md lists each kind's settings"),
    Code("NTL311", _E, "a tool setting has the wrong type", "`{kind: http, headers: [a, b]}`",
         "give the type docs/tools.md lists for the setting, or a `{{ }}` template that renders to it"),
    Code("NTL312", _W, "a NoETL setting noetl-temporal does not act on; it is ignored",
         "`assert:` on a python task", "remove the key: it has no effect here (docs/tools.md says why)"),
    Code("NTL313", _E, "a task's `output:` block asks for what noetl-temporal cannot do",
         "`output: {store: {kind: object}}`, `select: [{path: \"$..id\", as: ids}]`, `accumulate:`",
         "the message says what maps (docs/tools.md \"A task's `output:`\"): store kinds auto, disk, db, kv; "
         "plain JSONPaths"),
    Code("NTL314", _E, "a python task's code does not compile", "`code: \"result = (1 +\"`",
         "correct the Python at the reported line and column (it would fail there at run time)"),
    Code("NTL315", _E, "a tool setting written under the task's `spec:`, where no tool reads it",
         "`tool: {kind: http, url: ..., spec: {method: POST}}`",
         "move the key out of `spec:` to beside `kind:` (`spec:` holds policy, timeout, result and "
         "`spec.<kind>:` defaults)"),
    Code("NTL316", _E, "a tool setting's value is not one it takes",
         "`{kind: workflow, parent_close_policy: kill}`, `{kind: activity, heartbeat_timeout: 0}`",
         "write one of the values docs/tools.md lists for the setting (a number of seconds > 0)"),
    # NTL320: numbered apart from the tool-setting codes (NTL309...) so the two sets can grow.
    Code("NTL320", _E, "a NoETL tool kind that noetl-temporal does not run",
         "`kind: agent`, `kind: script`",
         "the message names what to use instead (usually a `python`, `shell`, `duckdb` or `result` task)"),
    Code("NTL321", _W, "a python task reads NoETL's implicit `context` global: it is given as the task's input "
                       "`context`, holding exactly the names the code reads",
         "`code: \"prev = context.get('load', {})\"` with no `context` in `input:`",
         "nothing to do; to make it explicit, write `input: {context: {load: \"{{ load }}\"}}` (a name that "
         "is no step, workload key or `execution_id` is left out, so `.get` returns its default)"),
    Code("NTL322", _W, "a python task reads NoETL's implicit `context` global other than by literal names: "
                       "here `context` is not defined there, and the code raises NameError at that line",
         "`code: \"for k in context: ...\"`, `context[name]`, `'a' in context`, `f(context)`",
         "pass what the code reads as input: `input: {prev: \"{{ load }}\"}` and read `prev`; a python task "
         "sees only its input (docs/tools.md), the values history records"),
    Code("NTL323", _W, "SQL writes `{{ execution_id }}` unquoted, where NoETL's numeric id goes: it is given "
                       "`{{ execution_number }}`, the execution's number",
         "`INSERT INTO t (execution_id) VALUES ({{ execution_id }})` into a BIGINT column",
         "nothing to do; write `{{ execution_number }}` to say so, or quote `'{{ execution_id }}'` into a TEXT "
         "column to keep the id itself (docs/semantics.md, \"execution_number\")"),
    Code("NTL324", _E, "an arc's `cond:`, an older NoETL spelling that NoETL 5.3.2 ignores (the arc is taken "
                       "whatever it says)", "`arcs: [{step: cleanup, cond: exit_code == 100}]`",
         "write the condition as the arc's `when:` template: `when: \"{{ exit_code == 100 }}\"`"),
    Code("NTL325", _E, "a task's `script:` comes from a source this runtime does not load (`gcs`)",
         "`script: {uri: \"gs://bucket/x.py\", source: {type: gcs}}`",
         "put the script in a file the worker reads (`source: {type: file}`), behind an http(s) URL "
         "(`source: {type: http, endpoint: ...}`) or in S3 (`source: {type: s3}`), or inline it "
         "(`code:` / `command:`)"),
    Code("NTL326", _W, "an s3 `script.source.auth` (NoETL's credential by name) is not read",
         "`source: {type: s3, auth: aws_credentials}`",
         "give `source: {access_key_id: \"{{ keychain.aws.access_key_id }}\", secret_access_key: "
         "\"{{ keychain.aws.secret_access_key }}\"}`, or run the worker with an AWS identity"),
    # NTL330-NTL339: the message kinds (nats, subscription) and cursor loops.
    Code("NTL330", _E, "a tool setting names a service noetl-temporal does not run",
         "`{kind: subscription, source: kafka, ...}`",
         "the message names what is missing and what to use instead (`source: nats`, a `python` task)"),
    # NTL336-NTL338: NoETL tool kinds that need a service this runtime cannot have (NTL320 is
    # for those with a local equivalent): the fates table counts them apart.
    Code("NTL336", _E, "`kind: snowflake` (or a transfer endpoint `type: snowflake`) needs a Snowflake account, "
                       "a cloud service noetl-temporal does not reach",
         "`tool: {kind: snowflake, auth: sf, command: SELECT 1}`, `{kind: transfer, source: {type: snowflake}}`",
         "query Snowflake from a `python` task with the snowflake-connector-python package, credentials "
         "from the keychain"),
    Code("NTL337", _E, "`kind: ducklake` needs NoETL's lake service (a catalog database and DuckDB's "
                       "DuckLake extension from its extension repository)",
         "`tool: {kind: ducklake, catalog_connection: ..., command: ...}`",
         "use `kind: duckdb` and attach the lake in SQL (`INSTALL ducklake; ATTACH 'ducklake:<catalog>' AS lake`)"),
    Code("NTL338", _E, "`kind: container` needs a Kubernetes cluster to run its Job",
         "`tool: {kind: container, image: alpine:3.19, command: [sh, -c, ...]}`",
         "start the container from a `shell` task (`docker run ...` or `kubectl ...`); "
         "`noetl-temporal run --dry-run` prints the Kubernetes Job NoETL would submit"),
    Code("NTL340", _W, "`executor.requires.features` names a feature no noetl-temporal worker provides; NoETL "
                       "does not check the list, so the playbook runs as it does there",
         "`requires: {features: [result_storage, ai_meta]}`",
         "nothing to do if the steps need nothing more than this worker has (a step that does fails there, "
         "as on NoETL); the features it provides are listed in docs/semantics.md (\"executor.requires\")"),
    Code("NTL331", _E, "`loop.cursor` and `loop.in` are both given: a loop takes its items from one of them",
         "`loop: {in: \"{{ rows }}\", cursor: {kind: postgres, claim: ...}}`",
         "keep `in:` for a list the step already has, or `cursor:` to read rows page by page"),
    Code("NTL332", _E, "`loop.cursor` has the wrong shape (it must be a mapping with `kind`, `claim` and, "
                       "for postgres, `auth`)", "`cursor: \"SELECT ...\"`",
         "write `cursor: {kind: postgres, auth: pg_local, claim: \"SELECT ... LIMIT {{ __frame_max_rows }}\"}`"),
    Code("NTL333", _E, "`loop.cursor.kind` names a database cursor loops do not read here (postgres and "
                       "duckdb only)", "`cursor: {kind: snowflake, ...}`",
         "read the rows with `kind: postgres` or `kind: duckdb`, or select them in a task and loop over them "
         "with `loop.in`"),
    Code("NTL334", _E, "`loop.cursor` has no `claim:` statement (the SQL that returns the next page of rows)",
         "`cursor: {kind: postgres, auth: pg_local}`",
         "add `claim: \"... LIMIT {{ __frame_max_rows }}\"`: it runs again until it returns no row "
         "(docs/semantics.md, \"Cursor loops\")"),
    Code("NTL335", _E, "a cursor loop's `spec.frame.max_rows` (the page size) is not a whole number from 1 to "
                       "10,000, or `spec.mode` is not `cursor` on a cursor loop",
         "`spec: {mode: parallel, frame: {max_rows: 0}}`",
         "write `spec: {mode: cursor, frame: {max_rows: 100}}` (concurrency is `spec.max_in_flight`)"),
    # NTL343-NTL345: NoETL's result tiers and artifact URIs on a cloud store: the runtime's
    # result stores are local (files, PostgreSQL); the message names the cloud service.
    Code("NTL343", _E, "a result store tier on Google Cloud Storage (`output.store.kind: gcs`) needs a GCS "
                       "bucket and GCP credentials, a cloud service noetl-temporal does not write results to",
         "`output: {store: {kind: gcs}}`",
         "use `kind: auto` or `disk` (files under $NOETL_STORE) or `db` (PostgreSQL); copy a result to GCS "
         "from a task (`gsutil cp` in a `shell` task, or google-cloud-storage in a `python` task)"),
    Code("NTL344", _E, "a result store tier on Amazon S3 (`output.store.kind: s3`) needs an S3 bucket and AWS "
                       "credentials, a cloud service noetl-temporal does not write results to",
         "`output: {store: {kind: s3}}`",
         "use `kind: auto` or `disk` (files under $NOETL_STORE) or `db` (PostgreSQL); copy a result to S3 "
         "from a task (`aws s3 cp` in a `shell` task, or boto3 in a `python` task)"),
    Code("NTL345", _E, "an `artifact` task's `uri` is on a cloud store (`s3://`, `gs://`): artifacts are "
                       "read and written on the worker's file system here",
         "`{kind: artifact, action: put, uri: \"gs://bucket/run.json\", data: ...}`",
         "write `uri: \"artifact://localfs/<path>\"` (or `file://`, or a path); move the file to the bucket "
         "from a task (`gsutil cp`, `aws s3 cp`)"),
    # ------------------------------------------------------------------ policies
    Code("NTL401", _E, "a task policy rule has the wrong shape", "`- when: ...` with no `then:`",
         "write `- when: \"{{ ... }}\"` with `then: {do: ...}`, or `- else: {then: {do: ...}}`"),
    Code("NTL402", _E, "`jump` goes to a label that is not a task of the same step",
         "`then: {do: jump, to: claim}` where the task is `claim_batch`",
         "use a task label of this step, or `previous`"),
    Code("NTL403", _E, "`jump` has no `to`", "`then: {do: jump}`",
         "add `to: <task label>` (or `to: previous`)"),
    Code("NTL404", _W, "retry settings on an action that is not `retry` are ignored",
         "`then: {do: continue, attempts: 3}`", "remove them, or use `do: retry`"),
    Code("NTL405", _W, "`to` on an action that is not `jump` is ignored", "`then: {do: continue, to: x}`",
         "remove it, or use `do: jump`"),
    Code("NTL406", _W, "rules after an `else` rule never match", "`- else: ...` followed by `- when: ...`",
         "move the `else` rule to the end"),
    Code("NTL407", _E, "an admission rule has the wrong shape", "`admit: {rules: [{when: x, then: true}]}`",
         "write `- when: \"{{ ... }}\"` with `then: {allow: true|false}`, or `- else: {then: {allow: ...}}`"),
    Code("NTL408", _W, "a `when` guard has no `{{ }}`, so it is a constant", "`when: ctx.ready`",
         "write the condition as a template: `when: \"{{ ctx.ready }}\"`"),
    Code("NTL409", _E, "a NoETL 5.x task policy hook (`before`, `after`, `finally`) has no defined meaning to run",
         "`spec: {policy: {finally: {...}}}`",
         "the message names the pipeline form that does it: a task before or after this one, or a clean-up "
         "task reached from both outcomes"),
    Code("NTL410", _E, "a step's `spec.policy` holds task actions (`rules`): a step policy holds only `admit`, "
                       "`failure` and `lifecycle`",
         "`step: {spec: {policy: {rules: [{when: ..., then: {do: retry}}]}}}`",
         "put the rules on the task they act on (`tool: {kind: ..., spec: {policy: {rules: [...]}}}`); route a "
         "failed step with an arc `when: \"{{ event.name == 'step.failed' }}\"`, or stop the run at it with "
         "`spec: {policy: {failure: {mode: fail_fast}}}`"),
    # ------------------------------------------------------------------ routing
    Code("NTL501", _E, "`next` is not in router form", "`next: end`, `next: [{step: end}]`",
         "write `next: {spec: {mode: exclusive}, arcs: [{step: end}]}`"),
    Code("NTL502", _E, "an arc goes to a step that does not exist", "`arcs: [{step: ned}]`",
         "use the name of a step of this workflow"),
    Code("NTL503", _E, "`executor.spec.entry_step` names no step", "`entry_step: begin` with no such step",
         "name an existing step, or remove it to start at the first step"),
    Code("NTL504", _E, "`executor.spec.final_step` names no step", "`final_step: summary` with no such step",
         "name an existing step, or remove it"),
    Code("NTL505", _W, "a step can never run: no arc path leads to it from the entry step",
         "a step nothing routes to", "add an arc to it, or remove it"),
    Code("NTL506", _W, "an arc targets the `final_step`", "`arcs: [{step: finish}]` with `final_step: finish`",
         "remove the arc: the final step runs once by itself after all other work ends"),
    Code("NTL507", _W, "arcs from concurrent branches into one join set the same `args` key",
         "`a -> j` with `args: {x: 1}` and `b -> j` with `args: {x: 2}` after an inclusive fan-out",
         "rename one key, or read each branch's value as `args._upstreams.<step>.<key>` "
         "(at the join the later arrival wins at `args.<key>`)"),
    Code("NTL508", _W, "steps route to each other with arcs that always fire: the cycle never ends",
         "`a -> b` and `b -> a`, neither arc with a `when`",
         "guard one arc of the cycle with a `when` that becomes false (a counter in ctx), or end it"),
    # ------------------------------------------------------------------ loops
    Code("NTL601", _E, "`loop.spec.max_in_flight` is above 1000", "`max_in_flight: 5000`",
         "use at most 1000 (Temporal allows 2,000 pending activities per execution)"),
    Code("NTL602", _W, "`set_iter` / `iter.*` outside a loop step has nothing to update",
         "`set: {iter.page: 2}` on a task of a step without `loop:`",
         "use `ctx.*`, or add a `loop:` to the step"),
    Code("NTL605", _E, "`iter.*` in a step's own `set` or an arc's `set`: there is no iteration to update",
         "`step: {loop: ..., set: {iter.seen: true}}`, `arcs: [{step: b, set: {iter.x: 1}}]`",
         "set `iter.*` from a task of the loop step (`tool: [{..., set: {iter.x: ...}}]`) or a policy action; "
         "use `ctx.*` for what later steps read"),
    Code("NTL603", _E, "`loop` has the wrong shape", "`loop: {iterator: x}` with no `in:`",
         "write `loop: {in: \"{{ list }}\", iterator: item, spec: {mode: sequential}}`"),
    # ------------------------------------------------------------------ templates
    Code("NTL604", _W, "a loop has no `iterator`; its item is named `item`", "`loop: {in: \"{{ rows }}\"}`",
         "name the item: `loop: {in: ..., iterator: row}`"),
    Code("NTL701", _E, "template syntax error", "`\"{{ ctx.count + }}\"`",
         "correct the Jinja2 expression"),
    Code("NTL702", _W, "a template reads a name nothing in the playbook defines",
         "`{{ nosuchvar }}`, `{{ compte.total }}` with a step `compute`",
         "correct the name (a step, task, workload key, arc arg, loop iterator or `set:` name), or "
         "write `| default(...)` if the run's payload supplies it"),
    Code("NTL703", _W, "a template reads a field a step's result certainly lacks",
         "`{{ start.totl }}` where `start` is a noop with `result: {total: 1}`",
         "read a field the result has (the warning lists them), or give the noop the field"),
    Code("NTL704", _E, "a template reads `keychain` where secrets are not allowed (only a task's tool "
                       "settings may: they render inside its activity)",
         "`set: {ctx.token: \"{{ keychain.api.token }}\"}`, an arc's `args`, a `when`",
         "read the secret in the tool settings that need it (`headers`, `env`, `dsn`...); a secret "
         "kept in ctx or args would be written to workflow history"),
    Code("NTL705", _W, "a template reads a workload key the playbook's `workload:` does not have",
         "`{{ workload.nmae }}` with `workload: {name: x}`",
         "correct the key (the warning names the close ones), declare it under `workload:`, or "
         "write `| default(...)` if the run's payload supplies it"),
    Code("NTL706", _E, "a template the workflow renders (a guard, `set`, `args`, `loop`, a `noop` or "
                       "`playbook` task's settings) uses a filter or test that only a task may use: its cost "
                       "is not bounded by its input (the list is in docs/durability.md)",
         "`when: \"{{ text | urlize }}\"`, `set: {ctx.t: \"{{ html | striptags }}\"}`",
         "use the filter in a task's arguments (a python, shell or http tool's settings render in the "
         "task's own activity), and read its result in the guard"),
    # ------------------------------------------------------------------ model checks
    Code("NTL901", _E, "a value has the wrong type or is out of range",
         "`then: {do: retyr}`, `attempts: 0`, `mode: paralel`, `policy: [...]` (a list)",
         "the fix names what the key takes, derived from the model: `policy` takes a mapping: write "
         "`policy: {rules: [...], on_unmatched: ...}`; `do` takes one of `continue`, `retry` ..."),
    Code("NTL902", _E, "unknown key", "`then: {do: retry, atempts: 3}`, `spec: {policy: {bogus_key: 1}}`",
         "remove the key or correct its spelling (the fix lists the keys the block takes)"),
    Code("NTL903", _E, "a required key is missing", "an arc without `step:`", "add the key"),
    # ------------------------------------------------------------------ the checker itself
    Code("NTL999", _E, "the checker failed on this input (a bug in noetl-temporal)",
         "an unexpected exception inside a validation pass",
         "report it with the playbook; the message names the exception"),
]

CODES: dict[str, Code] = {c.code: c for c in _TABLE}
assert len(CODES) == len(_TABLE), "duplicate validation code"

#: codes no longer emitted -> what they meant and why they went; never reused
RETIRED: dict[str, str] = {
    "NTL339": "warned that a template reads NoETL's step envelope `data` (`{{ load.data.command_0.rows }}`), "
              "which rendered empty; since the engine behaviour `step-envelope-data` it reads as NoETL reads it "
              "(docs/semantics.md, \"NoETL's step envelope\")",
}
assert not set(RETIRED) & set(CODES), "a retired validation code is reused"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """The reference page ``docs/validation-codes.md`` (kept identical by a test)."""
    lines = [
        "# Validation codes",
        "",
        "Every problem `noetl-temporal validate` (and loading a playbook) reports carries one",
        "of these stable codes, with `file:line:col`, the JSON path of the node as written in",
        "the file (for example `workflow[2].tool[1].spec.policy.rules[0].then.to`, or",
        "`workflow[0].tool.set[\"ctx.total\"]` for a single-object tool) and a fix. When the node",
        "itself is missing (a required key), the position is that of the enclosing node.",
        "Errors stop the playbook from loading; warnings do not. The checks run in stages (the",
        "file, the YAML, the dialect shapes, the model, the semantic and template-name checks): an",
        "error stops the stages after its own, except a tool setting's unknown key or wrong type",
        "(NTL310, NTL311), after which the later checks still run, so one `validate` reports them",
        "with, say, a missing setting in another step.",
        "",
        "This page is generated from `noetl_temporal/dsl/codes.py`",
        "(`python -c \"from noetl_temporal.dsl.codes import markdown; print(markdown(), end='')\"`).",
        "",
        "| code | severity | meaning | example | fix |",
        "|---|---|---|---|---|",
    ]
    for c in _TABLE:
        lines.append(f"| {c.code} | {c.severity} | {_cell(c.meaning)} | {_cell(c.example)} | {_cell(c.fix)} |")
    lines += ["", "## Retired codes", "", "No longer emitted, and never given another meaning.", "",
              "| code | what it was |", "|---|---|"]
    lines += [f"| {code} | {_cell(why)} |" for code, why in sorted(RETIRED.items())]
    return "\n".join(lines) + "\n"
