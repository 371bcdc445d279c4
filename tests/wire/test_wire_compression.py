"""OP_COMPRESSED round trips for every compressor, negotiation, the never-compress list."""

from __future__ import annotations

import bson
import pytest

from asyncmongo.core.wire.compression import (
    NEVER_COMPRESS,
    CompressionSettings,
    Compressor,
    compress,
    decode_op_compressed,
    decompress,
    encode_op_compressed,
    may_compress,
    negotiate,
)
from asyncmongo.core.wire.op_msg import decode_op_msg, encode_op_msg_payload
from asyncmongo.core.wire.opcodes import HEADER, HEADER_SIZE, OpCode
from asyncmongo.errors import ConfigurationError, ProtocolError

DATA = bson.encode({"x": "hello " * 500, "n": list(range(50))})


@pytest.mark.parametrize("compressor", list(Compressor))
def test_round_trip(compressor: Compressor) -> None:
    packed = compress(compressor, DATA, zlib_level=9)
    if compressor is not Compressor.NOOP:
        assert len(packed) < len(DATA)
    assert decompress(compressor, packed, len(DATA)) == DATA


@pytest.mark.parametrize("level", [-1, 0, 1, 9])
def test_zlib_levels(level: int) -> None:
    assert decompress(Compressor.ZLIB, compress(Compressor.ZLIB, DATA, level), len(DATA)) == DATA


def test_snappy_is_raw_block_format() -> None:
    import cramjam

    assert bytes(cramjam.snappy.decompress_raw(compress(Compressor.SNAPPY, DATA))) == DATA


@pytest.mark.parametrize("compressor", [Compressor.SNAPPY, Compressor.ZLIB, Compressor.ZSTD])
def test_op_compressed_message(compressor: Compressor) -> None:
    payload = encode_op_msg_payload(DATA)
    raw = b"".join(encode_op_compressed(5, OpCode.OP_MSG, payload, compressor, response_to=2))
    length, rid, rto, opcode = HEADER.unpack_from(raw)
    assert (length, rid, rto, opcode) == (len(raw), 5, 2, OpCode.OP_COMPRESSED)
    original, inflated = decode_op_compressed(raw[HEADER_SIZE:], 10**6)
    assert original == OpCode.OP_MSG
    assert decode_op_msg(rid, rto, inflated).body == DATA


def test_negotiation_uses_client_order() -> None:
    settings = CompressionSettings(("zstd", "snappy", "zlib"))
    assert negotiate(settings, {"compression": ["snappy", "zstd"]}) is Compressor.ZSTD
    assert negotiate(settings, {"compression": ["zlib"]}) is Compressor.ZLIB
    assert negotiate(settings, {"compression": []}) is None
    assert negotiate(settings, {}) is None
    assert negotiate(CompressionSettings(), {"compression": ["zlib"]}) is None


def test_settings_validated() -> None:
    with pytest.raises(ConfigurationError):
        CompressionSettings(("snoopy",))
    with pytest.raises(ConfigurationError):
        CompressionSettings(("zlib",), zlib_compression_level=10)
    with pytest.raises(ConfigurationError):
        Compressor.from_name("lz4")


SPEC_LIST = [
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "getnonce",
    "authenticate",
    "createUser",
    "updateUser",
    "copydbSaslStart",
    "copydbgetnonce",
    "copydb",
]


@pytest.mark.parametrize("name", SPEC_LIST)
def test_never_compressed(name: str) -> None:
    assert not may_compress(name)


@pytest.mark.parametrize("name", ["ping", "find", "insert", "getMore", "helloWorld"])
def test_compressed(name: str) -> None:
    assert may_compress(name)


def test_list_matches_spec() -> None:
    assert {n.lower() for n in SPEC_LIST} == NEVER_COMPRESS


def test_decompress_errors() -> None:
    with pytest.raises(ProtocolError):
        decompress(7, b"", 0)
    with pytest.raises(ProtocolError):
        decompress(Compressor.ZLIB, compress(Compressor.ZLIB, DATA), len(DATA) - 1)
