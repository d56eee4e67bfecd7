"""The payload converter: the SDK's JSON conversion, with a shortcut for our own messages.

The SDK turns a JSON value into an activity's or workflow's typed parameter with
``value_to_type``, which re-reads a dataclass's type hints (``typing.get_type_hints``) on
every call and walks every nested value of a ``dict[str, Any]``. For a ``RunTask`` that is
about half a millisecond, twice per task: a quarter of the CPU a fast-path (local activity)
step costs, measured with ``benchmarks``. Our messages are flat dataclasses whose fields are
JSON values, and a ``dict[str, Any]`` loaded from JSON is already what it claims to be, so
:class:`PlainJSONTypes` hands such values over as they are and builds our dataclasses with
one call. Anything else (a user's own types in an embedding deployment, nested dataclasses)
goes the SDK's way, unchanged. The JSON on the wire is the same either way.

The worker hands the converter class to the workflow sandbox as an object (it is not
re-imported per run), so the per-class cache below serves every workflow run.

Arguments the workflow marks as local-only (``local_only``: a local activity's, never in
history) are encoded as the same JSON under their own encoding name, which the claim
check leaves inline.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    AdvancedJSONEncoder,
    CompositePayloadConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    JSONPlainPayloadConverter,
    JSONTypeConverter,
)
from temporalio.exceptions import ApplicationError

from ..errors import ConfigError
from .local_only import LOCAL_ONLY_ENCODING, LocalOnly

__all__ = ["PlainJSONTypes", "ShallowDataclassEncoder", "LocalOnlyJSON", "PayloadConverter"]

_SCALARS = (str, int, float, bool, type(None))


def _is_plain(hint: Any) -> bool:
    """True if any JSON value of the right shape needs no conversion for ``hint``.

    ``Any``, scalars, and ``dict``/``list`` of plain hints with string keys. ``int`` and
    ``float`` count as plain: our encoder writes them as they were.
    """
    if hint is Any or hint in _SCALARS:
        return True
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return all(_is_plain(arg) for arg in args)
    if origin is dict:
        return not args or (args[0] is str and _is_plain(args[1]))
    if origin is list:
        return not args or _is_plain(args[0])
    return hint in (dict, list)


def _ours(hint: Any) -> bool:
    return isinstance(hint, type) and hint.__module__.startswith("noetl_temporal.")


def _factory(cls: type) -> Callable[[dict[str, Any]], Any] | None:
    """One call that builds ``cls`` from its JSON object, or None if a field needs converting."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if not all(_is_plain(hints[f.name]) for f in fields):
        return None
    names = frozenset(f.name for f in fields)

    def build(value: dict[str, Any]) -> Any:
        # Unknown keys are ignored, as the SDK does (an older or newer sender).
        return cls(**{k: v for k, v in value.items() if k in names})

    return build


# perf: the SDK's value_to_type copy of plain JSON and our dataclasses — benchmark: probes.activity_cpu, probes.workflow_cpu
class PlainJSONTypes(JSONTypeConverter):
    """Skip ``value_to_type`` where it would only copy: plain JSON hints and our flat dataclasses."""

    def __init__(self) -> None:
        self._factories: dict[type, Callable[[dict[str, Any]], Any] | None] = {}
        self._plain: dict[Any, bool] = {}

    def to_typed_value(self, hint: type, value: Any) -> Any:
        try:
            plain = self._plain.get(hint)
        except TypeError:  # an unhashable hint: leave it to the SDK
            return JSONTypeConverter.Unhandled
        if plain is None:
            plain = self._plain[hint] = _is_plain(hint)
        if plain and _fits(hint, value):
            return value
        if dataclasses.is_dataclass(hint) and _ours(hint) and isinstance(value, dict):
            if hint not in self._factories:
                self._factories[hint] = _factory(hint)
            build = self._factories[hint]
            if build is not None:
                return build(value)
        return JSONTypeConverter.Unhandled


def _fits(hint: Any, value: Any) -> bool:
    """The container type is right (the SDK would raise otherwise: keep its error)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint) or hint
    if origin is dict:
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(arg, value) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    return isinstance(value, hint) and not (hint in (int, float) and isinstance(value, bool))


# perf: one type cache per process, not one per converter the SDK builds — benchmark: probes.activity_cpu
_TYPES = PlainJSONTypes()  # one cache per process, shared by every converter instance


def _is_run_input(hint: Any) -> bool:
    # By name: under the workflow sandbox the class may be a re-imported copy.
    return _ours(hint) and hint.__name__ == "RunInput"


def _malformed_run_input(exc: Exception) -> ApplicationError:
    """A playbook workflow's input that is not a ``RunInput`` at all (not a JSON object, a
    field missing). A failure error here fails the workflow at once: the SDK decodes the
    input before any workflow code runs, and any other error would fail its workflow task,
    retried forever."""
    return ApplicationError(
        f"the input is not a NoETL playbook workflow's input: {exc}. Start playbooks with "
        "noetl_temporal.start_execution, or from a workflow with noetl_temporal.workflow.execute_playbook",
        type="PlaybookInvalid", non_retryable=True)


# perf: the SDK's dataclasses.asdict deep copy (a third of scheduling a RunTask) — benchmark: probes.workflow_cpu
class ShallowDataclassEncoder(AdvancedJSONEncoder):
    """The SDK's encoder, but a dataclass becomes a shallow dict of its fields.

    The SDK uses ``dataclasses.asdict``, which deep-copies every nested dict and list
    before ``json`` walks them again: a third of scheduling a ``RunTask`` in the profile.
    The JSON is the same: ``json`` calls this again for any dataclass nested in a field.
    """

    _names: dict[type, tuple[str, ...]] = {}

    def default(self, o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            cls = type(o)
            names = self._names.get(cls)
            if names is None:
                names = self._names[cls] = tuple(f.name for f in dataclasses.fields(o))
            return {name: getattr(o, name) for name in names}
        return super().default(o)


# A local-only value never leaves this process (history keeps a local activity's result,
# never its arguments), so nothing reads its bytes but the activity that decodes them: no
# sorted keys (the SDK sorts every dict it encodes; a batch of events costs a fifth more
# that way), and one encoder for every call (``encode`` keeps no state between calls).
# perf: the SDK's sorted keys on local-only payloads (2.44 -> 1.95 ms a batch) — benchmark: probes.event_store_write
_LOCAL_ENCODER = ShallowDataclassEncoder(separators=(",", ":"))
_LOCAL_METADATA = {"encoding": LOCAL_ONLY_ENCODING.encode()}


# perf: local activity arguments kept out of the claim check (~3 MB a 1,000-item loop) — benchmark: par_loop
class LocalOnlyJSON(JSONPlainPayloadConverter):
    """:class:`~.local_only.LocalOnly` values only, as JSON under ``LOCAL_ONLY_ENCODING``."""

    def __init__(self) -> None:  # decoding is the SDK's; encoding is ``to_payload``'s own
        super().__init__(custom_type_converters=[_TYPES], encoding=LOCAL_ONLY_ENCODING)

    def to_payload(self, value: Any) -> Payload | None:
        if not isinstance(value, LocalOnly):
            return None
        return Payload(metadata=_LOCAL_METADATA, data=_LOCAL_ENCODER.encode(value).encode())


class PayloadConverter(CompositePayloadConverter):
    """The SDK's default converters, its JSON one taught :class:`PlainJSONTypes`, and
    :class:`LocalOnlyJSON` first (a marked value would otherwise be plain JSON).

    The SDK builds a converter for every serialization context (each activity task, each
    workflow activation): the encoding converters are stateless, so they are built once."""

    # perf: the SDK building every encoding converter per activity task and activation — benchmark: probes.activity_cpu, probes.workflow_cpu
    _encoders: tuple[EncodingPayloadConverter, ...] | None = None

    def __init__(self) -> None:
        encoders = PayloadConverter._encoders
        if encoders is None:
            encoders = PayloadConverter._encoders = (LocalOnlyJSON(), *(
                JSONPlainPayloadConverter(encoder=ShallowDataclassEncoder, custom_type_converters=[_TYPES])
                if isinstance(conv, JSONPlainPayloadConverter) else conv
                for conv in DefaultPayloadConverter.default_encoding_payload_converters))
        super().__init__(*encoders)

    def from_payloads(self, payloads: Sequence[Payload], type_hints: list[type] | None = None) -> list[Any]:
        try:
            return super().from_payloads(payloads, type_hints)
        except (TypeError, ValueError) as exc:
            if type_hints and any(_is_run_input(hint) for hint in type_hints):
                raise _malformed_run_input(exc) from None
            raise
        except KeyError as exc:  # an encoding only the deployment's own codec undoes
            raise ConfigError(f"a payload in this execution cannot be decoded here ({exc.args[0]}): it was "
                              "written through the deployment's own payload codec",
                              fix="pass --codec MODULE:FACTORY or set NOETL_CODEC to the codec the workers "
                                  "use (docs/deployment.md, \"Embedding\")") from None
