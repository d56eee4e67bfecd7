"""The data converter of a deployment: the user's converter and codec, with ours layered in.

A deployment that already runs Temporal usually has its own ``DataConverter``: a payload
codec that encrypts (so history holds no plaintext), maybe its own payload converter.
:func:`data_converter` keeps both and adds what noetl-temporal needs, in this order:

* **payload conversion**: the user's converter class, taught to write our local-activity
  arguments (``local_only``) under their own encoding; with the SDK's default converter,
  ours (``payloads.PayloadConverter``, the same JSON without the per-call type walk).
* **codec, on the way out**: the user's codec first (it encrypts), then the claim check
  (``claimcheck.ClaimCheckCodec``), which moves what is still over the threshold to the
  payload store. So the payload store only ever holds what the user's codec produced
  (ciphertext), and history holds small references. On the way in, the reverse.

Local-activity arguments bypass both codecs: they never leave the worker's memory (a local
activity's marker records its result only), so there is nothing to encrypt or offload.

A converter without the claim check works until one payload passes Temporal's 2 MB limit;
:func:`warn_without_claim_check` says so when a worker starts.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
)
from temporalio.converter import (
    PayloadConverter as SDKPayloadConverter,
)

from .. import sealing
from ..errors import ConfigError
from ..sealing import CODEC_ENV
from .claimcheck import DEFAULT_THRESHOLD, ClaimCheckCodec
from .headline_failures import without_headline_stacks
from .local_only import LOCAL_ONLY_ENCODING
from .payloads import LocalOnlyJSON, PayloadConverter

__all__ = ["data_converter", "LayeredCodec", "has_claim_check", "warn_without_claim_check", "CODEC_ENV",
           "load_user_converter", "configured_data_converter", "users_codec"]

log = logging.getLogger("noetl_temporal")
_LOCAL_ONLY = LOCAL_ONLY_ENCODING.encode()


class LayeredCodec(PayloadCodec, WithSerializationContext):
    """The user's codec, then the claim check (decoding: the reverse).

    Local-activity arguments pass both untouched (they never leave the worker)."""

    def __init__(self, user: PayloadCodec | None, claim_check: ClaimCheckCodec) -> None:
        self.user = user
        self.claim_check = claim_check

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await self._each_not_local(payloads, self._encode)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await self._each_not_local(payloads, self._decode)

    async def _encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        encoded = await self.user.encode(payloads) if self.user else list(payloads)
        return await self.claim_check.encode(encoded)

    async def _decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        restored = await self.claim_check.decode(payloads)
        return await self.user.decode(restored) if self.user else restored

    @staticmethod
    async def _each_not_local(payloads: Sequence[Payload], apply: Any) -> list[Payload]:
        """``apply`` to the payloads that are not local-only, keeping the order.

        A codec may return fewer payloads than it was given (the SDK allows it), so when
        none is local-only the whole sequence goes through at once."""
        local = [p.metadata.get("encoding") == _LOCAL_ONLY for p in payloads]
        if not any(local):
            result: list[Payload] = await apply(payloads)
            return result
        others = iter(await apply([p for p, is_local in zip(payloads, local, strict=True) if not is_local]))
        return [p if is_local else next(others) for p, is_local in zip(payloads, local, strict=True)]

    def with_context(self, context: SerializationContext) -> LayeredCodec:
        if not isinstance(self.user, WithSerializationContext):
            return self
        user = self.user.with_context(context)
        return self if user is self.user else LayeredCodec(user, self.claim_check)


def _with_local_only(user_class: type[SDKPayloadConverter]) -> type[SDKPayloadConverter]:
    """The user's payload converter, writing our local-only values under their encoding."""
    if user_class is DefaultPayloadConverter or user_class is PayloadConverter:
        return PayloadConverter
    if issubclass(user_class, CompositePayloadConverter):
        class LocalOnlyFirst(user_class):  # type: ignore[valid-type,misc]
            def __init__(self) -> None:
                super().__init__()
                self._set_converters(LocalOnlyJSON(), *self.converters.values())
        LocalOnlyFirst.__name__ = LocalOnlyFirst.__qualname__ = f"{user_class.__name__}WithLocalOnly"
        return LocalOnlyFirst
    # Any other converter: local-only values are its to convert (they are plain lists and
    # dataclasses); the claim check then may store a large one, which costs a file, not a run.
    return user_class


def data_converter(user: DataConverter | PayloadCodec | None = None, *, store: str | None = None,
                   threshold: int = DEFAULT_THRESHOLD) -> DataConverter:
    """The converter for every client and worker of a deployment.

    ``user``: your ``DataConverter`` (its payload converter, codec, failure converter and
    other settings are kept; the failure converter leaves out the stack trace of a playbook's
    own closing failure, ``headline_failures.py``) or just your ``PayloadCodec``; None for the default.
    ``store``/``threshold``: the claim check's payload store (default
    the payloads of ``$NOETL_STORE``) and the size above which a payload goes there.
    """
    base = user if isinstance(user, DataConverter) else DataConverter.default
    codec = user if isinstance(user, PayloadCodec) else base.payload_codec
    if isinstance(codec, LayeredCodec):  # already ours: do not stack a second claim check
        codec = codec.user
    return dataclasses.replace(base, payload_converter_class=_with_local_only(base.payload_converter_class),
                               failure_converter_class=without_headline_stacks(base.failure_converter_class),
                               payload_codec=LayeredCodec(codec, ClaimCheckCodec(store, threshold)))


def has_claim_check(converter: DataConverter) -> bool:
    """Whether ``converter``'s codec moves large payloads out of history.

    Ours (``LayeredCodec``, ``ClaimCheckCodec``), or a codec of yours that says so with a
    true ``claim_check`` attribute (one that applies ``ClaimCheckCodec`` itself)."""
    codec = converter.payload_codec
    return isinstance(codec, LayeredCodec | ClaimCheckCodec) or bool(getattr(codec, "claim_check", False))


def warn_without_claim_check(converter: DataConverter, where: str) -> bool:
    """Log a warning when ``converter`` has no claim check; True if it has one."""
    if has_claim_check(converter):
        return True
    log.warning("%s: the client's data converter has no noetl claim check, so any payload over "
                "Temporal's 2 MB limit (a large step result, ctx or input) fails its task. Connect the "
                "client with data_converter=noetl_temporal.data_converter(your_converter_or_codec), "
                "which keeps your converter and codec and adds the claim check after your codec.", where)
    return False


def load_user_converter(spec: str | None) -> DataConverter | PayloadCodec | None:
    """The ``DataConverter`` or ``PayloadCodec`` that ``module:factory`` names (None: none).

    ``factory`` is an attribute of the module: a converter or codec, or something callable
    without arguments that returns one."""
    try:
        value: DataConverter | PayloadCodec | None = sealing.load(spec)
    except ValueError as exc:
        raise ConfigError(str(exc), fix=f"set --codec/{CODEC_ENV} to MODULE:FACTORY, where FACTORY (a "
                          "DataConverter, a PayloadCodec, or a function returning one) is importable on this "
                          "machine") from None
    return value


def users_codec(converter: DataConverter) -> PayloadCodec | None:
    """The deployment's own codec in ``converter`` (ours layered over it, or alone), if any."""
    codec = converter.payload_codec
    if isinstance(codec, LayeredCodec):
        return codec.user
    return None if isinstance(codec, ClaimCheckCodec) else codec


def configured_data_converter(spec: str | None = None) -> DataConverter:
    """:func:`data_converter` over the codec ``spec`` names (default: ``$NOETL_CODEC``); the
    stores of this process are sealed with the same codec (``noetl_temporal.sealing``)."""
    converter = data_converter(load_user_converter(spec or os.environ.get(CODEC_ENV)))
    sealing.install(users_codec(converter))
    return converter


#: Temporal's default per-payload error limit is 2 MiB; keep room for the rest of the task's
#: result (attempt records, metadata) around the outcome we measure.
HISTORY_PAYLOAD_LIMIT = 2 * 1024 * 1024 - 64 * 1024


async def oversized(converter: DataConverter, value: Any, limit: int = HISTORY_PAYLOAD_LIMIT) -> int | None:
    """The encoded size of ``value`` if it cannot enter history through ``converter``, else None.

    Only a converter without the claim check can produce such a payload; for it the value is
    encoded as the worker would (the user's codec included) and measured."""
    if has_claim_check(converter):
        return None
    # Cheap first: the usual result is far below the limit even if the codec doubles it.
    if sum(p.ByteSize() for p in converter.payload_converter.to_payloads([value])) <= limit // 2:
        return None
    payloads = await converter.encode([value])
    size = sum(p.ByteSize() for p in payloads)
    return size if size > limit else None
