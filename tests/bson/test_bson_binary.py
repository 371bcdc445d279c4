"""Binary: subtypes, the UUID prose tests of specs/bson-binary-uuid and the vector prose tests
of specs/bson-binary-vector (its README)."""

from __future__ import annotations

import pickle
import uuid

import pytest

from asyncmongo.bson import (
    Binary,
    BinaryVector,
    BinaryVectorDtype,
    CodecOptions,
    InvalidBinary,
    InvalidDocument,
    UuidRepresentation,
    decode,
    encode,
)

THE_UUID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
R = UuidRepresentation


# -- UUID: explicit encoding --


@pytest.mark.parametrize(
    ("representation", "subtype", "hex_data"),
    [
        (None, 4, "00112233445566778899AABBCCDDEEFF"),
        (R.STANDARD, 4, "00112233445566778899AABBCCDDEEFF"),
        (R.JAVA_LEGACY, 3, "7766554433221100FFEEDDCCBBAA9988"),
        (R.CSHARP_LEGACY, 3, "33221100554477668899AABBCCDDEEFF"),
        (R.PYTHON_LEGACY, 3, "00112233445566778899AABBCCDDEEFF"),
    ],
)
def test_explicit_uuid_encoding(
    representation: UuidRepresentation | None, subtype: int, hex_data: str
) -> None:
    if representation is None:
        binary = Binary.from_uuid(THE_UUID)
    else:
        binary = Binary.from_uuid(THE_UUID, representation)
    assert binary.subtype == subtype
    assert bytes(binary) == bytes.fromhex(hex_data)


def test_explicit_uuid_encoding_unspecified_raises() -> None:
    with pytest.raises(InvalidBinary):
        Binary.from_uuid(THE_UUID, R.UNSPECIFIED)


# -- UUID: explicit decoding --


@pytest.mark.parametrize(
    ("subtype", "hex_data", "works_with"),
    [
        (4, "00112233445566778899AABBCCDDEEFF", R.STANDARD),
        (3, "7766554433221100FFEEDDCCBBAA9988", R.JAVA_LEGACY),
        (3, "33221100554477668899AABBCCDDEEFF", R.CSHARP_LEGACY),
        (3, "00112233445566778899AABBCCDDEEFF", R.PYTHON_LEGACY),
    ],
)
def test_explicit_uuid_decoding(subtype: int, hex_data: str, works_with: R) -> None:
    binary = Binary(bytes.fromhex(hex_data), subtype)
    assert binary.as_uuid(works_with) == THE_UUID
    if works_with == R.STANDARD:
        assert binary.as_uuid() == THE_UUID
    else:
        with pytest.raises(InvalidBinary):
            binary.as_uuid()
    with pytest.raises(InvalidBinary):
        binary.as_uuid(R.UNSPECIFIED)
    wrong = [r for r in (R.STANDARD, R.JAVA_LEGACY) if (r == R.STANDARD) != (subtype == 4)]
    for representation in wrong:
        with pytest.raises(InvalidBinary):
            binary.as_uuid(representation)


# -- UUID: implicit encoding and decoding through CodecOptions --


@pytest.mark.parametrize(
    ("representation", "subtype", "hex_data"),
    [
        (R.JAVA_LEGACY, 3, "7766554433221100FFEEDDCCBBAA9988"),
        (R.CSHARP_LEGACY, 3, "33221100554477668899AABBCCDDEEFF"),
        (R.PYTHON_LEGACY, 3, "00112233445566778899AABBCCDDEEFF"),
        (R.STANDARD, 4, "00112233445566778899AABBCCDDEEFF"),
    ],
)
def test_implicit_uuid_encoding(representation: R, subtype: int, hex_data: str) -> None:
    opts = CodecOptions(uuid_representation=representation)
    data = encode({"_id": THE_UUID}, codec_options=opts)
    raw = decode(data)["_id"]
    assert raw == Binary(bytes.fromhex(hex_data), subtype)
    assert decode(data, opts)["_id"] == THE_UUID


def test_implicit_uuid_encoding_unspecified_raises() -> None:
    with pytest.raises(InvalidDocument, match="UNSPECIFIED"):
        encode({"_id": THE_UUID})


@pytest.mark.parametrize("representation", list(R))
def test_implicit_decoding_table(representation: R) -> None:
    """specs/bson-binary-uuid implicit decoding: only the matching subtype becomes a UUID."""
    standard = Binary.from_uuid(THE_UUID, R.STANDARD)
    legacy = Binary.from_uuid(THE_UUID, R.JAVA_LEGACY)
    doc = decode(
        encode({"s": standard, "l": legacy}), CodecOptions(uuid_representation=representation)
    )
    if representation == R.STANDARD:
        assert doc == {"s": THE_UUID, "l": legacy}
    elif representation == R.JAVA_LEGACY:
        assert doc == {"s": standard, "l": THE_UUID}
    elif representation == R.UNSPECIFIED:
        assert doc == {"s": standard, "l": legacy}
    else:  # other legacy orders decode subtype 3 with their own byte order
        assert doc["s"] == standard
        assert isinstance(doc["l"], uuid.UUID)


# -- Binary value semantics --


def test_binary_equality_hash_and_repr() -> None:
    assert Binary(b"x", 5) == Binary(b"x", 5)
    assert Binary(b"x", 5) != Binary(b"x", 6)
    assert Binary(b"x", 0) != b"x"
    assert hash(Binary(b"x", 5)) == hash(Binary(b"x", 5))
    assert repr(Binary(b"x", 5)) == "Binary(b'x', 5)"
    assert pickle.loads(pickle.dumps(Binary(b"x", 128))) == Binary(b"x", 128)


@pytest.mark.parametrize("subtype", [-1, 256])
def test_binary_subtype_range(subtype: int) -> None:
    with pytest.raises(InvalidDocument):
        Binary(b"", subtype)


def test_binary_rejects_wrong_types() -> None:
    with pytest.raises(TypeError):
        Binary("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Binary(b"", "5")  # type: ignore[arg-type]


@pytest.mark.parametrize("subtype", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x80, 0xFF])
def test_binary_round_trips_every_subtype(subtype: int) -> None:
    value: bytes = Binary(b"\x00\x01payload", subtype) if subtype else b"\x00\x01payload"
    data = encode({"b": value})
    assert decode(data) == {"b": value}
    assert encode(decode(data)) == data


def test_old_binary_subtype_carries_an_inner_length() -> None:
    data = encode({"x": Binary(b"\xff\xff", 2)})
    assert data.hex().upper() == "13000000057800060000000202000000FFFF00"


# -- Vector prose tests --


def test_vector_encoding_with_nonzero_ignored_bits_raises() -> None:
    with pytest.raises(ValueError):
        Binary.from_vector([0b11111111], BinaryVectorDtype.PACKED_BIT, padding=7)


def test_vector_decoding_with_nonzero_ignored_bits_raises() -> None:
    with pytest.raises(InvalidBinary):
        Binary(b"\x10\x07\xff", subtype=9).as_vector()


def test_vector_comparison() -> None:
    b1 = Binary(b"\x10\x07\x80", subtype=9)
    b3 = Binary.from_vector([0b10000000], BinaryVectorDtype.PACKED_BIT, padding=7)
    assert b1 == b3
    assert b1.as_vector() == b3.as_vector()
    assert b1 != Binary(b"\x10\x07\xff", subtype=9)
    assert BinaryVector([255], BinaryVectorDtype.PACKED_BIT, 7) != b1.as_vector()


def test_vector_accepts_a_binary_vector() -> None:
    vector = BinaryVector([1, -2, 3], BinaryVectorDtype.INT8)
    assert Binary.from_vector(vector).as_vector() == vector
    with pytest.raises(InvalidBinary):
        Binary.from_vector(vector, BinaryVectorDtype.INT8)


@pytest.mark.parametrize(
    ("values", "dtype", "padding"),
    [
        ([128], BinaryVectorDtype.INT8, 0),
        ([256], BinaryVectorDtype.PACKED_BIT, 0),
        ([1e40], BinaryVectorDtype.FLOAT32, 0),
        (["a"], BinaryVectorDtype.FLOAT32, 0),
        ([], BinaryVectorDtype.PACKED_BIT, 1),
        ([1], BinaryVectorDtype.PACKED_BIT, 8),
        ([1], BinaryVectorDtype.INT8, 1),
        ([1], 0x42, 0),
    ],
)
def test_vector_encoding_validation(values: list[object], dtype: int, padding: int) -> None:
    with pytest.raises(InvalidBinary):
        Binary.from_vector(values, dtype, padding)  # type: ignore[arg-type]


def test_as_vector_needs_subtype_9_and_metadata() -> None:
    with pytest.raises(InvalidBinary):
        Binary(b"\x03\x00", 0).as_vector()
    with pytest.raises(InvalidBinary):
        Binary(b"\x03", 9).as_vector()
    with pytest.raises(InvalidBinary):
        Binary(b"\x42\x00", 9).as_vector()
