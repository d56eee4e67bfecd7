"""The keys a playbook's root and its steps take: the one definition of their shape.

The root's keys are the :class:`~.models.Playbook` model's fields (:data:`ROOT_KEYS`): the
source and normalized forms name them alike, and the JSON Schema's root is generated from
the model too.

A step differs: users write it in the *source* form and :mod:`.normalize` turns it into
the *normalized* form :class:`~.models.Step` holds (``set:`` splits into ``set_ctx`` /
``set_iter``), so a step's source shape is declared here, in :data:`STEP_FIELDS`, and the
rest follows it:

* :mod:`.normalize` accepts exactly these keys (an unknown one is NTL203, with a
  did-you-mean over :data:`STEP_KEYS`, which NTL203's fix lists too) and passes the
  ``copied`` ones through unchanged;
* :mod:`.schema` builds the JSON Schema's ``Step`` from each key's ``schema``, ``doc``,
  ``example`` and ``required``;
* :class:`~.models.Step` has exactly the fields the keys ``fill`` (plus
  :data:`MODEL_ONLY`), and every ``example`` loads and reaches them:
  ``tests/dsl/test_keys.py`` checks both, so a key added here and not to the model or to
  normalize (or the other way round) fails the suite.

CONTRIBUTING.md "Adding a DSL field" is the whole recipe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .models import Playbook

__all__ = ["ROOT_KEYS", "StepKey", "STEP_FIELDS", "STEP_KEYS", "COPIED_STEP_KEYS", "MODEL_ONLY"]

#: every root key, in the model's order (did-you-mean suggestions and NTL101's fix read it)
ROOT_KEYS: tuple[str, ...] = tuple(Playbook.model_fields)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


@dataclass(frozen=True)
class StepKey:
    """One key of a step as users write it."""

    name: str
    #: JSON Schema of the source spelling (``$ref``s name the schema's ``$defs``)
    schema: Mapping[str, Any]
    #: one line for the schema's ``description`` (editors show it)
    doc: str
    #: a value as users write it: the schema's ``examples``; the tests load a step with it
    #: and check it reaches the model fields the key ``fills``
    example: Any
    #: the :class:`~.models.Step` fields the key fills once normalized
    fills: tuple[str, ...] = ()
    #: the schema requires it (normalize reports its absence with its own code)
    required: bool = False
    #: normalize copies the value as it is (``null`` = absent); else a method of its own
    #: rewrites it (``tool``, ``spec``, ``loop``, ``next``, the ``set`` family)
    copied: bool = False


STEP_FIELDS: tuple[StepKey, ...] = (
    StepKey("step", {"type": "string", "minLength": 1}, "the step's name, unique in the workflow",
            "fetch", fills=("step",), required=True, copied=True),
    StepKey("desc", {"type": ["string", "null"]}, "what the step is for (the graph view shows it; never interpreted)",
            "fetch the users", fills=("desc",), copied=True),
    StepKey("spec", _ref("StepSpec"), "step settings: admission and failure policy, timeout, local activities",
            {"timeout": 30}, fills=("spec",)),
    StepKey("input", {"type": ["object", "null"]}, "merged under each task's `input` (the task's keys win)",
            {"page": 1}, fills=("input",), copied=True),
    StepKey("loop", _nullable(_ref("Loop")), "run the pipeline once per item of `in:`",
            {"in": "{{ workload.users }}", "iterator": "user"}, fills=("loop",)),
    StepKey("tool", _ref("Tool"), "the task pipeline: one task, or a list of labelled tasks",
            {"kind": "noop"}, fills=("tool",), required=True),
    StepKey("output", {"type": ["object", "null"]},
            "NoETL's result block for the step's result (`store`, `output_select`, `inline_max_bytes`): "
            "given to the step's last task as its `output:`",
            {"output_select": ["count"]}, fills=("tool",)),
    StepKey("next", _nullable(_ref("Router")), "where tokens go when a run ends: `{spec: {mode}, arcs}`",
            {"spec": {"mode": "exclusive"}, "arcs": [{"step": "end"}]}, fills=("next",)),
    StepKey("set", {"type": "object", "propertyNames": {"pattern": r"^ctx(\..+)?$"}},
            "`ctx.<name>` patches applied when the step run ends",
            {"ctx.done": True}, fills=("set_ctx",)),
    StepKey("set_ctx", {"type": "object"}, "execution-scoped `ctx` patches (the `set: {ctx.<name>}` form)",
            {"done": True}, fills=("set_ctx",)),
)

#: every key a step may have, in the table's order (did-you-mean suggestions read it)
STEP_KEYS: tuple[str, ...] = tuple(k.name for k in STEP_FIELDS)
#: the keys normalize passes through as they are
COPIED_STEP_KEYS: tuple[str, ...] = tuple(k.name for k in STEP_FIELDS if k.copied)
#: :class:`~.models.Step` fields no source key fills, and why they exist
MODEL_ONLY: Mapping[str, str] = {
    "set_vars": "Step shares Patches with tasks and arcs; a step's `set:` takes only ctx. keys, "
                "so a step's set_vars is always empty",
    "set_iter": "shared through Patches too: a step's own `set:` applies when the step run ends, after its "
                "iterations, so `iter.*` there has nothing to update and is refused (NTL605); the field "
                "stays so definitions stored before the refusal load",
}
