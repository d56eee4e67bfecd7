"""The deployment's own converter and codec, with ours layered in (pure code: no server)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    DefaultPayloadConverter,
)

from noetl_temporal.conversion.claimcheck import ClaimCheckCodec
from noetl_temporal.conversion.converter import (
    LayeredCodec,
    data_converter,
    has_claim_check,
    load_user_converter,
    warn_without_claim_check,
)
from noetl_temporal.conversion.local_only import LOCAL_ONLY_ENCODING, LocalOnlyList
from noetl_temporal.conversion.payload_converter import PayloadConverter
from noetl_temporal.errors import ConfigError
from tests.support.user_codec import ENCODING, EncryptingCodec

SECRET = "distinctive-plaintext-7f3a"
BIG = {"rows": [f"{SECRET} row {i}" for i in range(200)]}


def _stored(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in root.rglob("*") if p.is_file()]


async def test_the_users_codec_encrypts_before_the_claim_check(tmp_path):
    converter = data_converter(EncryptingCodec(), store=str(tmp_path), threshold=1024)
    [payload] = await converter.encode([BIG])
    assert payload.metadata["encoding"] == b"noetl/claim-check"   # history holds a reference
    [stored] = _stored(tmp_path)
    assert SECRET.encode() not in stored                           # the store: ciphertext only
    inner = Payload()
    inner.ParseFromString(stored)
    assert inner.metadata["encoding"] == ENCODING                  # what the user's codec produced
    assert await converter.decode([payload], [dict]) == [BIG]


async def test_a_small_payload_is_encrypted_inline(tmp_path):
    converter = data_converter(EncryptingCodec(), store=str(tmp_path), threshold=1024)
    [payload] = await converter.encode([{"s": SECRET}])
    assert payload.metadata["encoding"] == ENCODING and SECRET.encode() not in payload.data
    assert _stored(tmp_path) == []
    assert await converter.decode([payload], [dict]) == [{"s": SECRET}]


async def test_local_activity_arguments_pass_both_codecs(tmp_path):
    converter = data_converter(EncryptingCodec(), store=str(tmp_path), threshold=1024)
    local = LocalOnlyList([BIG])
    payloads = await converter.encode([local, {"s": 1}])
    assert payloads[0].metadata["encoding"] == LOCAL_ONLY_ENCODING.encode()  # never leaves the worker
    assert payloads[1].metadata["encoding"] == ENCODING
    assert _stored(tmp_path) == []
    assert await converter.decode(payloads, [list, dict]) == [[BIG], {"s": 1}]


class _UsersConverter(CompositePayloadConverter):
    def __init__(self) -> None:
        super().__init__(*DefaultPayloadConverter.default_encoding_payload_converters)


def test_the_users_converter_and_settings_are_kept(tmp_path):
    user = DataConverter(payload_converter_class=_UsersConverter, payload_codec=EncryptingCodec(),
                         failure_converter_class=DefaultFailureConverterWithEncodedAttributes)
    converter = data_converter(user, store=str(tmp_path))
    assert issubclass(converter.payload_converter_class, _UsersConverter)
    # theirs, leaving out only the stack of a playbook's own closing failure (headline_failures.py)
    assert issubclass(converter.failure_converter_class, DefaultFailureConverterWithEncodedAttributes)
    assert isinstance(converter.payload_codec, LayeredCodec)
    assert isinstance(converter.payload_codec.user, EncryptingCodec)
    [payload] = converter.payload_converter.to_payloads([LocalOnlyList([1])])
    assert payload.metadata["encoding"] == LOCAL_ONLY_ENCODING.encode()   # our encoding added to theirs
    # The SDK's default converter becomes ours (same JSON, faster decoding of our messages).
    assert data_converter(EncryptingCodec(), store=str(tmp_path)).payload_converter_class is PayloadConverter


def test_layering_twice_keeps_one_claim_check(tmp_path):
    once = data_converter(EncryptingCodec(), store=str(tmp_path))
    twice = data_converter(once, store=str(tmp_path))
    assert isinstance(twice.payload_codec, LayeredCodec)
    assert isinstance(twice.payload_codec.user, EncryptingCodec)


def test_a_converter_without_the_claim_check_is_reported(tmp_path, caplog):
    assert has_claim_check(data_converter(store=str(tmp_path)))
    assert has_claim_check(DataConverter(payload_codec=ClaimCheckCodec(str(tmp_path))))
    with caplog.at_level(logging.WARNING, logger="noetl_temporal"):
        assert not warn_without_claim_check(DataConverter(payload_codec=EncryptingCodec()), "worker on q")
    assert "worker on q" in caplog.text and "noetl_temporal.data_converter" in caplog.text


def test_the_codec_setting_names_a_factory_or_an_object():
    assert isinstance(load_user_converter("tests.support.user_codec:codec"), EncryptingCodec)
    assert isinstance(load_user_converter("tests.support.user_codec:converter"), DataConverter)
    assert load_user_converter(None) is None


@pytest.mark.parametrize(("spec", "said"), [
    ("tests.support.user_codec", "is not MODULE:FACTORY"),
    ("tests.support.nope:codec", "cannot be loaded"),
    ("tests.support.user_codec:missing", "cannot be loaded"),
    ("tests.support.user_codec:ENCODING", "not a DataConverter or PayloadCodec"),
])
def test_a_wrong_codec_setting_is_a_clear_error(spec, said):
    with pytest.raises(ConfigError) as err:
        load_user_converter(spec)
    assert said in str(err.value) and "MODULE:FACTORY" in str(err.value)
