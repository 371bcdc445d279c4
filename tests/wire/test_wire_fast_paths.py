"""The OP_MSG fast paths (one body section, no checksum) agree with the general code.

``encode_op_msg`` frames a sequence-less request in one pack and ``decode_op_msg`` reads a
one-section ``bytes`` reply without a memoryview; passing a memoryview (or sequences)
takes the general path, so the two can be compared on the same input.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncmongo.core.wire.op_msg import (
    DocumentSequence,
    OpMsg,
    decode_op_msg,
    encode_op_msg,
    encode_op_msg_payload,
)
from asyncmongo.core.wire.opcodes import CHECKSUM_PRESENT, HEADER, MORE_TO_COME
from asyncmongo.errors import ProtocolError


def _document(payload: bytes) -> bytes:
    return struct.pack("<i", len(payload) + 5) + payload + b"\x00"


def _decode_both(data: bytes) -> tuple[OpMsg | str, OpMsg | str]:
    results: list[OpMsg | str] = []
    forms: tuple[bytes, memoryview] = (bytes(data), memoryview(bytearray(data)))
    for form in forms:
        try:
            results.append(decode_op_msg(7, 3, form))
        except ProtocolError as exc:
            results.append(f"ProtocolError: {exc}")
    return results[0], results[1]


@given(st.binary(max_size=64), st.sampled_from([0, MORE_TO_COME, 1 << 16, 1 << 3, 1 << 17]))
def test_one_section_replies_decode_alike(payload: bytes, flags: int) -> None:
    data = struct.pack("<IB", flags, 0) + _document(payload)
    fast, general = _decode_both(data)
    assert fast == general


@given(st.binary(max_size=40))
def test_malformed_replies_fail_alike(data: bytes) -> None:
    fast, general = _decode_both(struct.pack("<I", 0) + data)
    assert type(fast) is type(general)
    if isinstance(fast, OpMsg):
        assert fast == general


def test_a_wrong_body_length_is_refused() -> None:
    data = struct.pack("<IB", 0, 0) + _document(b"\x0aa\x00")
    with pytest.raises(ProtocolError):
        decode_op_msg(1, 0, data[:-1] + b"\x01")  # not NUL-terminated
    with pytest.raises(ProtocolError):
        decode_op_msg(1, 0, data + b"\x00")  # a stray byte after the body


@given(st.binary(max_size=64), st.sampled_from([0, MORE_TO_COME, 1 << 16]))
def test_requests_frame_alike(payload: bytes, flags: int) -> None:
    body = _document(payload)
    buffers = encode_op_msg(11, body, (), flags, 5)
    fast = b"".join(buffers)
    rest = b"".join(encode_op_msg_payload(body, (), flags))
    general = HEADER.pack(16 + len(rest), 11, 5, 2013) + rest
    assert fast == general
    assert buffers[0] == general[:16]  # OP_COMPRESSED wraps buffers[1:]: the payload
    assert b"".join(buffers[1:]) == rest
    assert decode_op_msg(11, 5, fast[16:]).body == body


def test_sequences_and_checksums_take_the_general_path() -> None:
    body = _document(b"")
    framed = b"".join(encode_op_msg(1, body, (DocumentSequence("documents", (body,)),)))
    message = decode_op_msg(1, 0, framed[16:])
    assert message.sequences == (DocumentSequence("documents", (body,)),)
    with pytest.raises(ProtocolError):
        encode_op_msg(1, body, (), CHECKSUM_PRESENT)
