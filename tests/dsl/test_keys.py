"""One definition of a step's shape (``dsl/keys.py``) and of the root's (the model):
normalize, the model and the JSON Schema agree with it, so a key added to one of them and
not to the others fails here."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from noetl_temporal.dsl import load_playbook_text, playbook_json_schema
from noetl_temporal.dsl.keys import COPIED_STEP_KEYS, MODEL_ONLY, STEP_FIELDS, STEP_KEYS
from noetl_temporal.dsl.models import Playbook, Step
from noetl_temporal.dsl.normalize import _ROOT_TYPES, ROOT_KEYS

from .helpers import codes, errors, playbook


def test_the_step_model_has_exactly_the_fields_the_keys_fill():
    filled = {name for key in STEP_FIELDS for name in key.fills}
    model = set(Step.model_fields)
    assert model - filled - set(MODEL_ONLY) == set(), (
        "Step model fields no step key fills: declare the key in dsl/keys.py (or, if users never "
        "write it, in MODEL_ONLY with why)")
    assert filled - model == set(), "step keys fill fields the Step model does not have"
    assert set(MODEL_ONLY) <= model and not set(MODEL_ONLY) & filled


def test_every_key_fills_a_field_and_a_copied_key_its_own():
    for key in STEP_FIELDS:
        assert key.fills, f"step key {key.name!r} fills no Step field"
        if key.copied:
            assert key.fills == (key.name,), f"a copied key fills the field of its name: {key.name!r}"
    assert len(set(STEP_KEYS)) == len(STEP_KEYS)


def test_the_schema_step_is_the_table():
    schema = playbook_json_schema()
    step = schema["$defs"]["Step"]
    assert list(step["properties"]) == list(STEP_KEYS)
    assert step["additionalProperties"] is False
    assert step["required"] == [key.name for key in STEP_FIELDS if key.required]
    for key in STEP_FIELDS:
        ref = key.schema.get("$ref") or next((s["$ref"] for s in key.schema.get("anyOf", []) if "$ref" in s), None)
        if ref:
            assert ref.removeprefix("#/$defs/") in schema["$defs"], f"{key.name}: {ref} is not a schema definition"


def _with_key(key, value) -> str:
    step = {"step": "fetch", "tool": {"kind": "noop"}, key: value}
    if key == "next":
        step["next"] = value
        return playbook(yaml.safe_dump({"workflow": [step, {"step": "end", "tool": {"kind": "noop"}}]},
                                       sort_keys=False))
    return playbook(yaml.safe_dump({"workload": {"users": [1]}, "workflow": [step]}, sort_keys=False))


@pytest.mark.parametrize("key", STEP_FIELDS, ids=lambda key: key.name)
def test_each_key_is_accepted_everywhere_and_reaches_the_model(key):
    text = _with_key(key.name, key.example)
    assert errors(text) == []
    jsonschema.Draft202012Validator(playbook_json_schema()).validate(yaml.safe_load(text))
    step = load_playbook_text(text).playbook.workflow[0]
    defaults = Step(step="x", tool=[])
    for name in key.fills:
        assert getattr(step, name) != getattr(defaults, name), f"`{key.name}:` did not reach Step.{name}"


def test_copied_keys_arrive_as_written():
    step = load_playbook_text(_with_key("desc", "d")).playbook.workflow[0]
    assert step.desc == "d"
    for name in COPIED_STEP_KEYS:
        key = next(k for k in STEP_FIELDS if k.name == name)
        loaded = load_playbook_text(_with_key(name, key.example)).playbook.workflow[0]
        assert getattr(loaded, name) == key.example


def test_a_key_outside_the_table_is_refused_by_normalize_and_schema():
    text = _with_key("descr", "typo")
    assert codes(errors(text)) == ["NTL203"]
    assert "did you mean 'desc'" in errors(text)[0].message
    assert list(jsonschema.Draft202012Validator(playbook_json_schema()).iter_errors(yaml.safe_load(text)))


def test_root_keys_are_the_model_and_the_schema():
    assert ROOT_KEYS == tuple(Playbook.model_fields)
    assert set(playbook_json_schema()["properties"]) == set(ROOT_KEYS)
    assert set(_ROOT_TYPES) <= set(ROOT_KEYS)
