"""JSON Schema (Draft 2020-12) of the playbook *source* form, for editors and CI.

Users' YAML uses the dialect the loader normalizes (``set:`` blocks, ``- else:``
rules, a single-object ``tool``, ``{allow}`` under ``then``), so the models' own
schema (the normalized form) would reject real playbooks. This schema starts from
``Playbook.model_json_schema()`` (metadata, executor, loop and router specs, result
specs ... stay generated) and replaces the definitions whose source spelling
differs; a step's comes from the table of step keys in :mod:`.keys`. It is a first line of defence: the loader's checks (references, scopes,
templates) go further, but the refused shapes of docs/validation-codes.md such as
``next: end``, a tool without ``kind`` or step ``type:`` already fail here.
"""

from __future__ import annotations

import copy
from typing import Any

from ..tool_kinds import DECLARATIONS
from ..tool_kinds.declaration import COMMON, Setting, ToolKind
from .keys import STEP_FIELDS
from .models import MAX_RETRY_ATTEMPTS, MAX_RETRY_DELAY_S, Playbook
from .tasks import ALL_KINDS
from .validate import MAX_IN_FLIGHT

__all__ = ["playbook_json_schema", "SCHEMA_ID"]

SCHEMA_ID = "https://noetl-temporal.dev/schemas/playbook-v10.json"
_LEGACY_TASK_KEYS = ("case", "retry", "sink", "eval", "expr", "when")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: dict[str, Any], *, required: tuple[str, ...] = (), closed: bool = True,
            description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": not closed}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


_TEMPLATE = {"type": "string", "pattern": r"\{\{|\{%", "description": "a template rendering to the value"}
_JSON_TYPES = {"mapping": "object", "list": "array", "string": "string", "number": "number",
               "integer": "integer", "boolean": "boolean", "null": "null"}


def _setting_schema(setting: Setting) -> dict[str, Any]:
    if "any" in setting.types:
        return {"description": setting.doc}
    typed = {"type": [*dict.fromkeys(_JSON_TYPES[t] for t in setting.types), "null"]}
    if setting.template:
        return {"anyOf": [typed, _TEMPLATE], "description": setting.doc}
    return {**typed, "description": setting.doc}


def _kind_settings(decl: ToolKind) -> dict[str, Any]:
    """``if kind == <kind> then`` its settings (aliases and the NoETL keys it ignores too)."""
    props = {name: _setting_schema(s) for s in (*decl.settings, *COMMON) for name in s.names}
    props.update({key: {"description": f"ignored (NTL312): {why}"} for key, why in decl.ignored.items()})
    return {"if": {"properties": {"kind": {"const": decl.kind}}, "required": ["kind"]},
            "then": {"properties": props}}


#: a task's ``output:`` (NoETL 5.x; dsl/task_output.py): what ``validate`` accepts
_TASK_OUTPUT = {"type": "object", "additionalProperties": False, "description": "NoETL 5.x result handling "
                "(docs/tools.md \"A task's `output:`\")", "properties": {
    "select": {"type": "array", "items": {"type": "object", "required": ["path", "as"], "additionalProperties": False,
                                          "properties": {"path": {"type": "string"}, "as": {"type": "string"}}}},
    "output_select": {"type": "array", "items": {"type": "string"}},
    "as": {"type": "string"}, "inline_max_bytes": {"type": "integer", "minimum": 0},
    "preview_max_bytes": {"type": "integer", "minimum": 0},
    "scope": {"enum": ["step", "execution", "workflow", "permanent"]},
    "store": {"type": "object", "properties": {"kind": {"enum": ["auto", "disk", "db"]}}}}}


def _or_template(number: dict[str, Any]) -> dict[str, Any]:
    """A number, or a ``{{ }}`` template rendered to one when it is used (NoETL 5.x)."""
    return {"anyOf": [number, {"type": "string", "pattern": r"\{\{", "description": "a template that renders "
                               "the number (checked once rendered)"}]}


def _source_defs(generated: dict[str, Any]) -> dict[str, Any]:
    defs = copy.deepcopy(generated)
    patch_maps = {"set_ctx": {"type": "object"}, "set_iter": {"type": "object"}}
    defs["Guard"] = {"description": "a template such as \"{{ ctx.n > 0 }}\"; absent/null = always",
                     "type": ["string", "boolean", "null"]}
    defs["SetBlock"] = {"type": "object", "description": "`ctx.<name>` and `iter.<name>` keys patch those "
                        "scopes; other keys are pipeline-local names (tasks, actions) or args (arcs)"}
    action_props = {
        "do": {"enum": ["continue", "retry", "jump", "break", "fail"]},
        "attempts": _or_template({"type": "integer", "minimum": 1, "maximum": MAX_RETRY_ATTEMPTS}),
        "backoff": {"enum": ["none", "linear", "exponential", "fixed", "constant"]},
        "delay": _or_template({"type": "number", "minimum": 0, "maximum": MAX_RETRY_DELAY_S}),
        "max_delay": _or_template({"type": ["number", "null"], "minimum": 0, "maximum": MAX_RETRY_DELAY_S}),
        "to": {"type": ["string", "null"]},
        "set": _ref("SetBlock"), **patch_maps, "set_vars": {"type": "object"},
    }
    defs["PolicyAction"] = _object(action_props)
    defs["PolicyRule"] = _object({
        "when": _ref("Guard"),
        "then": _nullable(_ref("PolicyAction")),
        "else": {"anyOf": [{"type": "null"}, _object({"then": _nullable(_ref("PolicyAction"))}, required=("then",)),
                           _ref("PolicyAction")]},
    }, description="`- when: ...` + `then:`, or the fallback `- else: {then: ...}`")
    allow = _object({"allow": {"type": "boolean"}}, required=("allow",))
    defs["AdmitRule"] = _object({
        "when": _ref("Guard"), "then": allow, "allow": {"type": "boolean"},
        "else": {"anyOf": [{"type": "null"}, _object({"then": allow}, required=("then",)), allow]},
    })
    defs["Task"] = {
        **_object({"name": {"type": "string", "minLength": 1}, "kind": {"enum": list(ALL_KINDS)},
                   "spec": _ref("TaskSpec"), "output": _TASK_OUTPUT, "set": _ref("SetBlock"), **patch_maps, "set_vars": {"type": "object"}},
                  required=("kind",), closed=False,
                  description="one tool task; every other key (code, url, cmd, input ...) configures the tool"),
        "not": {"anyOf": [{"required": [k]} for k in _LEGACY_TASK_KEYS]},
        # each kind's declared settings (NTL310, NTL311); `workbook` tasks stay open (the
        # entry supplies the settings). Required keys are left to `validate`: a
        # `spec.<kind>:` default on an outer layer may supply them.
        "allOf": [_kind_settings(decl) for decl in DECLARATIONS.values()],
        "unevaluatedProperties": {"not": {}, "description": "unknown setting for this kind (NTL310)"},
    }
    del defs["Task"]["additionalProperties"]  # unevaluatedProperties decides, per kind
    defs["Task"]["allOf"].append({"if": {"properties": {"kind": {"const": "workbook"}}, "required": ["kind"]},
                                  "then": {"additionalProperties": True}})
    defs["LabelledTask"] = {"type": "object", "minProperties": 1, "maxProperties": 1,
                            "additionalProperties": _ref("Task"), "description": "`- label: {kind: ...}`"}
    defs["Tool"] = {"anyOf": [_ref("Task"), {"type": "array", "minItems": 1,
                                             "items": {"anyOf": [_ref("Task"), _ref("LabelledTask")]}}]}
    defs["Arc"] = _object({"step": {"type": "string"}, "when": _ref("Guard"), "args": {"type": "object"},
                           "set": _ref("SetBlock"), **patch_maps}, required=("step",))
    defs["Router"] = _object({"spec": _ref("RouterSpec"),
                              "arcs": {"type": ["array", "null"], "items": _ref("Arc")}},
                             description="`next: {spec: {mode}, arcs: [{step, when, args, set}]}`")
    loop_spec = defs["LoopSpec"]
    in_flight = _or_template({"type": "integer", "minimum": 1, "maximum": MAX_IN_FLIGHT})
    loop_spec["properties"]["max_in_flight"] = _nullable(in_flight)
    defs["Loop"] = _object({"in": {}, "iterator": {"type": "string"},
                            "mode": loop_spec["properties"]["mode"], "max_in_flight": in_flight,
                            "spec": _ref("LoopSpec")}, required=("in",))
    defs["StepSpec"]["not"] = {"required": ["next_mode"]}
    defs["Step"] = _object({key.name: {**key.schema, "description": key.doc, "examples": [key.example]}
                            for key in STEP_FIELDS},
                           required=tuple(key.name for key in STEP_FIELDS if key.required))
    defs["WorkbookTask"]["properties"]["tool"] = _nullable(_ref("Task"))
    return defs


def playbook_json_schema() -> dict[str, Any]:
    """The JSON Schema users' playbook YAML (after YAML → JSON) validates against."""
    generated = Playbook.model_json_schema(by_alias=True)
    props = copy.deepcopy(generated["properties"])
    for key in ("metadata", "executor", "workload", "workbook", "spec", "keychain"):
        props[key] = _nullable(props[key])
    props["workflow"] = {"type": "array", "minItems": 1, "items": _ref("Step")}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "NoETL v10 playbook (source form)",
        "description": "Playbook YAML as users write it; see docs/dialect-aliases.md and docs/validation-codes.md",
        "type": "object",
        "properties": props,
        "required": ["workflow"],
        "additionalProperties": False,
        "$defs": _source_defs(generated["$defs"]),
    }
