"""The sans-I/O reader: framing under any chunking, responseTo tracking, every error path."""

from __future__ import annotations

import random
import struct

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.bson.codec import decode
from asyncmongo.core.wire.compression import Compressor, encode_op_compressed
from asyncmongo.core.wire.op_msg import (
    OpMsg,
    decode_op_msg,
    encode_op_msg,
    encode_op_msg_payload,
)
from asyncmongo.core.wire.opcodes import HEADER, OpCode, OpMsgFlags
from asyncmongo.core.wire.reader import MessageReader
from asyncmongo.errors import InvalidBSON, ProtocolError


def reply(response_to: int, doc: dict[str, object], request_id: int = 100, flags: int = 0) -> bytes:
    return b"".join(
        encode_op_msg(request_id, bson.encode(doc), flags=flags, response_to=response_to)
    )


def test_whole_message() -> None:
    reader = MessageReader()
    reader.expect(5)
    assert reader.next_reply() is None
    reader.feed(reply(5, {"ok": 1}))
    msg = reader.next_reply()
    assert msg is not None and bson.decode(msg.body) == {"ok": 1}
    assert reader.next_reply() is None and reader.expected_response_to is None


def test_byte_by_byte() -> None:
    reader = MessageReader()
    reader.expect(5)
    data = reply(5, {"ok": 1, "s": "x" * 300})
    got = []
    for i in range(len(data)):
        reader.feed(data[i : i + 1])
        msg = reader.next_reply()
        if msg is not None:
            got.append((i, msg))
    assert [i for i, _ in got] == [len(data) - 1]
    assert reader.buffered == 0


@given(st.lists(st.integers(min_value=1, max_value=64), min_size=1), st.randoms())
@settings(max_examples=60, deadline=None)
def test_random_chunks_exhaust_stream(chunk_sizes: list[int], rng: random.Random) -> None:
    # an exhaust stream: each moreToCome reply is answered by the next one
    stream = reply(1, {"n": 0}, request_id=10, flags=OpMsgFlags.MORE_TO_COME)
    stream += reply(10, {"n": 1}, request_id=11, flags=OpMsgFlags.MORE_TO_COME)
    stream += reply(11, {"n": 2}, request_id=12)
    reader = MessageReader()
    reader.expect(1)
    got, pos = [], 0
    while pos < len(stream):
        size = rng.choice(chunk_sizes)
        reader.feed(stream[pos : pos + size])
        pos += size
        while (msg := reader.next_reply()) is not None:
            got.append(bson.decode(msg.body)["n"])
    assert got == [0, 1, 2]
    assert reader.expected_response_to is None


def test_compressed_reply_is_inflated() -> None:
    payload = encode_op_msg_payload(bson.encode({"ok": 1, "z": "a" * 1000}))
    reader = MessageReader()
    reader.expect(3)
    reader.feed(
        b"".join(encode_op_compressed(50, OpCode.OP_MSG, payload, Compressor.ZSTD, response_to=3))
    )
    msg = reader.next_reply()
    assert msg is not None and bson.decode(msg.body)["z"] == "a" * 1000


def header(length: int, response_to: int = 1, opcode: int = 2013) -> bytes:
    return HEADER.pack(length, 9, response_to, opcode)


def compressed(opcode: int, size: int, cid: int, data: bytes, response_to: int = 1) -> bytes:
    body = struct.pack("<iiB", opcode, size, cid) + data
    return header(16 + len(body), response_to, 2012) + body


ERRORS = {
    "length below header": header(8),
    "length above max": header(1000),
    "unsolicited": reply(7, {"ok": 1}),
    "wrong responseTo": reply(2, {"ok": 1}),
    "unknown opcode": header(20, opcode=1) + b"\x00" * 4,
    "op_query reply": header(20, opcode=2004) + b"\x00" * 4,
    "garbage sections": header(24) + b"\x00" * 4 + b"\x07" * 4,
    "compressed: unknown compressor": compressed(2013, 10, 9, b"x" * 10),
    "compressed: too big": compressed(2013, 10**6, 1, b"x"),
    "compressed: nested": compressed(2012, 10, 0, b"x" * 10),
    "compressed: garbage snappy": compressed(2013, 10, 1, b"\xff" * 10),
    "compressed: garbage zlib": compressed(2013, 10, 2, b"\xff" * 10),
    "compressed: garbage zstd": compressed(2013, 10, 3, b"\xff" * 10),
    "compressed: size lie": compressed(2013, 11, 0, b"x" * 10),
    "compressed: short prefix": header(20, opcode=2012) + b"\x00" * 4,
}


@pytest.mark.parametrize("data", ERRORS.values(), ids=ERRORS.keys())
def test_protocol_errors(data: bytes) -> None:
    reader = MessageReader(max_message_size=500)
    reader.expect(1)
    reader.feed(data)
    with pytest.raises(ProtocolError):
        reader.next_reply()
    with pytest.raises(ProtocolError):  # stays broken: the connection must be discarded
        reader.next_reply()
    assert "broken" in repr(reader)


def test_server_mode_reads_requests() -> None:
    reader = MessageReader(check_response_to=False)
    reader.feed(reply(0, {"ping": 1}, request_id=42))
    msg = reader.next_reply()
    assert msg is not None and msg.request_id == 42


@given(st.binary(max_size=300))
@settings(max_examples=400, deadline=None)
def test_fuzz_only_protocol_errors(data: bytes) -> None:
    reader = MessageReader(max_message_size=1024)
    reader.expect(struct.unpack_from("<i", data, 8)[0] if len(data) >= 12 else 0)
    reader.feed(data)
    try:
        while (msg := reader.next_reply()) is not None:
            decode(msg.body)  # asyncmongo's own codec: the stack the connection runs
            reader.expect(msg.request_id)
    except (ProtocolError, InvalidBSON):
        pass


@given(st.binary(min_size=1, max_size=200), st.integers(min_value=0, max_value=2))
@settings(max_examples=300, deadline=None)
def test_fuzz_mutated_valid_message(noise: bytes, where: int) -> None:
    good = reply(1, {"ok": 1, "arr": [1, 2, 3]})
    cut = [len(good) // 2, 16, 20][where]
    data = good[:cut] + noise + good[cut + len(noise) :]
    reader = MessageReader(max_message_size=2048)
    reader.expect(1)
    reader.feed(data)
    try:
        reader.next_reply()
    except ProtocolError:
        pass


@given(st.binary(max_size=120), st.integers(min_value=0, max_value=3))
@settings(max_examples=400, deadline=None)
def test_fuzz_framed_garbage_documents(payload: bytes, flags: int) -> None:
    # a well-framed OP_MSG whose body is random: the reader or the codec must refuse it
    # with ProtocolError / InvalidBSON, never anything else
    doc = struct.pack("<i", len(payload) + 5) + payload + b"\x00"
    body = struct.pack("<I", flags) + b"\x00" + doc
    reader = MessageReader()
    reader.expect(1)
    reader.feed(HEADER.pack(16 + len(body), 2, 1, 2013) + body)
    try:
        msg = reader.next_reply()
        assert msg is not None
        decode(msg.body)
    except (ProtocolError, InvalidBSON):
        pass


@given(
    st.binary(max_size=80),
    st.sampled_from([b"\x00", b"\x00", b"\x07"]),
    st.sampled_from([0, 2, 1 << 16, 1]),
    st.lists(st.integers(min_value=1, max_value=40), min_size=1),
    st.randoms(),
)
@settings(max_examples=300, deadline=None)
def test_any_chunking_reads_what_decode_op_msg_reads(
    payload: bytes, end: bytes, flags: int, chunk_sizes: list[int], rng: random.Random
) -> None:
    # a framed OP_MSG with one kind-0 section (its last byte not always a document's end),
    # then a plain reply: however the bytes arrive, the reader gives what decode_op_msg
    # gives for the whole message (or its ProtocolError), and the next reply after it
    document = struct.pack("<i", len(payload) + 5) + payload + end
    body = struct.pack("<IB", flags, 0) + document
    try:
        expected = decode_op_msg(2, 1, body)
    except ProtocolError:
        expected = None
    stream = HEADER.pack(16 + len(body), 2, 1, OpCode.OP_MSG) + body + reply(2, {"n": 1})
    reader = MessageReader()
    reader.expect(1)
    got: list[OpMsg] = []
    pos = 0
    try:
        while pos < len(stream):
            size = rng.choice(chunk_sizes)
            reader.feed(stream[pos : pos + size])
            pos += size
            while (msg := reader.next_reply()) is not None:
                got.append(msg)
                reader.expect(msg.request_id if msg.flags & OpMsgFlags.MORE_TO_COME else 2)
    except ProtocolError:
        assert expected is None
        return
    assert expected is not None and got[0] == expected
    if not expected.flags & OpMsgFlags.MORE_TO_COME:
        assert [bson.decode(m.body) for m in got[1:]] == [{"n": 1}]
        assert reader.buffered == 0


def test_a_large_reply_in_many_pieces_keeps_what_follows() -> None:
    big = reply(1, {"data": b"x" * 3_000_000}, request_id=7)
    after = reply(7, {"n": 2}, request_id=8)
    stream = big + after[:10]
    reader = MessageReader()
    reader.expect(1)
    for start in range(0, len(stream), 65536):
        reader.feed(stream[start : start + 65536])
    msg = reader.next_reply()
    assert msg is not None and bson.decode(msg.body) == {"data": b"x" * 3_000_000}
    assert reader.buffered == 10 and reader.next_reply() is None
    reader.expect(7)
    reader.feed(after[10:])
    last = reader.next_reply()
    assert last is not None and bson.decode(last.body) == {"n": 2} and reader.buffered == 0
