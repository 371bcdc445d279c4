"""OP_MSG encode/decode round trips and every decoding defect (OP_MSG spec)."""

from __future__ import annotations

import struct

import bson  # PyMongo's codec, as an independent peer for building test bytes
import pytest

from asyncmongo.core.wire.crc32c import crc32c
from asyncmongo.core.wire.op_msg import (
    DocumentSequence,
    decode_op_msg,
    encode_op_msg,
    encode_op_msg_payload,
    encode_op_msg_sized,
)
from asyncmongo.core.wire.opcodes import HEADER, HEADER_SIZE, OpCode, OpMsgFlags
from asyncmongo.errors import ProtocolError


def split(buffers: list[bytes]) -> tuple[tuple[int, int, int, int], bytes]:
    raw = b"".join(buffers)
    return HEADER.unpack_from(raw), raw[HEADER_SIZE:]


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_round_trip_body_only() -> None:
    body = bson.encode({"ping": 1, "$db": "admin"})
    (length, request_id, response_to, opcode), rest = split(encode_op_msg(7, body))
    assert (length, request_id, response_to, opcode) == (HEADER_SIZE + len(rest), 7, 0, 2013)
    msg = decode_op_msg(request_id, response_to, rest)
    assert msg.body == body and msg.sequences == () and msg.flags == 0
    assert not msg.more_to_come


def test_round_trip_with_sequences_and_flags() -> None:
    body = bson.encode({"insert": "c", "$db": "d"})
    docs = tuple(bson.encode({"_id": i, "x": "y" * i}) for i in range(5))
    seqs = [DocumentSequence("documents", docs), DocumentSequence("other", ())]
    flags = OpMsgFlags.MORE_TO_COME | OpMsgFlags.EXHAUST_ALLOWED
    (_, rid, rto, _), rest = split(encode_op_msg(1, body, seqs, flags, response_to=9))
    msg = decode_op_msg(rid, rto, rest)
    assert msg.body == body
    assert msg.sequences == (DocumentSequence("documents", docs), DocumentSequence("other", ()))
    assert msg.more_to_come and msg.exhaust_allowed and msg.response_to == 9
    assert seqs[0].encoded_size() == len(
        b"".join(encode_op_msg_payload(body, seqs[:1]))
    ) - 4 - 1 - len(body)


def test_sequence_before_body_is_allowed() -> None:
    body = bson.encode({"a": 1})
    doc = bson.encode({"b": 2})
    seq = b"\x01" + struct.pack("<i", 4 + 2 + len(doc)) + b"d\x00" + doc
    msg = decode_op_msg(1, 0, struct.pack("<I", 0) + seq + b"\x00" + body)
    assert msg.body == body and msg.sequences == (DocumentSequence("d", (doc,)),)


def with_checksum(body: bytes, request_id: int = 3, corrupt: bool = False) -> bytes:
    payload = struct.pack("<I", OpMsgFlags.CHECKSUM_PRESENT) + b"\x00" + body
    header = HEADER.pack(HEADER_SIZE + len(payload) + 4, request_id, 0, OpCode.OP_MSG)
    crc = crc32c(header + payload) ^ (1 if corrupt else 0)
    return payload + struct.pack("<I", crc)


def test_checksum_verified() -> None:
    body = bson.encode({"ok": 1})
    assert decode_op_msg(3, 0, with_checksum(body)).body == body


def test_checksum_mismatch_rejected() -> None:
    with pytest.raises(ProtocolError, match="checksum mismatch"):
        decode_op_msg(3, 0, with_checksum(bson.encode({"ok": 1}), corrupt=True))


def test_never_sends_checksums() -> None:
    with pytest.raises(ProtocolError):
        encode_op_msg(1, bson.encode({}), flags=OpMsgFlags.CHECKSUM_PRESENT)


GOOD = bson.encode({"ok": 1})
FLAGS0 = struct.pack("<I", 0)

BAD_MESSAGES = {
    "too short for flags": b"\x00\x00",
    "unknown required flag": struct.pack("<I", 1 << 5) + b"\x00" + GOOD,
    "no body": FLAGS0,
    "two bodies": FLAGS0 + b"\x00" + GOOD + b"\x00" + GOOD,
    "unknown payload type": FLAGS0 + b"\x00" + GOOD + b"\x02" + GOOD,
    "body length beyond end": FLAGS0 + b"\x00" + GOOD[:-1],
    "body length too small": FLAGS0 + b"\x00" + struct.pack("<i", 3) + b"\x00",
    "body not NUL terminated": FLAGS0 + b"\x00" + GOOD[:-1] + b"\x01",
    "truncated body length": FLAGS0 + b"\x00" + b"\x05\x00",
    "sequence truncated size": FLAGS0 + b"\x00" + GOOD + b"\x01\x05",
    "sequence size beyond end": FLAGS0
    + b"\x00"
    + GOOD
    + b"\x01"
    + struct.pack("<i", 99)
    + b"x\x00",
    "sequence size too small": FLAGS0 + b"\x00" + GOOD + b"\x01" + struct.pack("<i", 2),
    "identifier unterminated": FLAGS0 + b"\x00" + GOOD + b"\x01" + struct.pack("<i", 6) + b"xy",
    "identifier not utf8": FLAGS0 + b"\x00" + GOOD + b"\x01" + struct.pack("<i", 6) + b"\xff\x00",
    "sequence doc overruns": FLAGS0
    + b"\x00"
    + GOOD
    + b"\x01"
    + struct.pack("<i", 4 + 2 + len(GOOD) - 1)
    + b"d\x00"
    + GOOD[:-1],
    "duplicate identifier": FLAGS0
    + b"\x00"
    + GOOD
    + (b"\x01" + struct.pack("<i", 6) + b"d\x00") * 2,
    "checksum flag, no room": struct.pack("<I", 1) + b"\x00",
}


@pytest.mark.parametrize("data", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
def test_malformed_is_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_op_msg(1, 0, data)


def test_unknown_optional_flag_bits_are_ignored() -> None:
    msg = decode_op_msg(1, 0, struct.pack("<I", 1 << 20) + b"\x00" + GOOD)
    assert msg.body == GOOD


@pytest.mark.parametrize(
    "flags", [0, int(OpMsgFlags.EXHAUST_ALLOWED), int(OpMsgFlags.MORE_TO_COME)]
)
@pytest.mark.parametrize(
    "identifiers", [(), ("documents",), ("updates", "deletes"), ("nsInfo", "ops")]
)
def test_sized_encoding_is_the_plain_one_and_its_length(
    flags: int, identifiers: tuple[str, ...]
) -> None:
    """encode_op_msg_sized: the same buffers as encode_op_msg, and their total length, which
    is the header's messageLength; the sections decode back (known and other identifiers)."""
    body = bson.encode({"insert": "c", "$db": "d"})
    docs = [bson.encode({"_id": i, "x": "y" * i}) for i in range(3)]
    sequences = [DocumentSequence(name, docs[: i + 1]) for i, name in enumerate(identifiers)]
    buffers, length = encode_op_msg_sized(7, body, sequences, flags)
    assert buffers == encode_op_msg(7, body, sequences, flags)
    assert length == sum(map(len, buffers))
    (message_length, request_id, _, _), rest = split(buffers)
    assert (message_length, request_id) == (length, 7)
    message = decode_op_msg(7, 0, rest)
    assert message.flags == flags
    assert [(s.identifier, list(s.documents)) for s in message.sequences] == [
        (s.identifier, list(s.documents)) for s in sequences
    ]
