"""``MessageReader.plain_reply``, the usual reply's shortcut, agrees with ``feed``/``next_reply``.

A chunk that is exactly one plain reply (uncompressed OP_MSG answering the expected request,
flagBits 0, one kind-0 section) gives its body and clears the expected id; anything else
gives None and leaves the reader as it was, so ``feed``/``next_reply`` read it (or refuse it)
as before.
"""

from __future__ import annotations

import struct

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.core.wire.compression import Compressor, encode_op_compressed
from asyncmongo.core.wire.op_msg import OpMsg, encode_op_msg_payload
from asyncmongo.core.wire.opcodes import CHECKSUM_PRESENT, EXHAUST_ALLOWED, MORE_TO_COME, OpCode
from asyncmongo.core.wire.reader import MessageReader
from asyncmongo.errors import ProtocolError

BODY = bson.encode({"ok": 1.0, "n": 3})


def reply(response_to: int = 5, body: bytes = BODY, flags: int = 0) -> bytes:
    payload = struct.pack("<IB", flags, 0) + body
    return struct.pack("<iiii", 16 + len(payload), 100, response_to, 2013) + payload


def expecting(request_id: int | None = 5, max_message_size: int = 48_000_000) -> MessageReader:
    reader = MessageReader(max_message_size)
    reader.expect(request_id)
    return reader


def general(data: bytes, request_id: int | None = 5, max_size: int = 48_000_000) -> object:
    """What feed/next_reply make of ``data``: the message, None, or the error's type."""
    reader = expecting(request_id, max_size)
    reader.feed(data)
    try:
        return reader.next_reply()
    except ProtocolError as exc:
        return type(exc)


def test_a_plain_reply_gives_its_body() -> None:
    reader = expecting()
    assert reader.plain_reply(reply()) == BODY
    assert reader.expected_response_to is None and reader.buffered == 0
    # answered: the same reply again is unsolicited, for both readers
    assert reader.plain_reply(reply()) is None
    reader.feed(reply())
    with pytest.raises(ProtocolError, match="unsolicited"):
        reader.next_reply()


def test_the_smallest_plain_reply() -> None:
    empty = bson.encode({})
    assert expecting().plain_reply(reply(body=empty)) == empty


NOT_PLAIN = {
    "wrong responseTo": reply(response_to=6),
    "more to come": reply(flags=MORE_TO_COME),
    "exhaust allowed bit": reply(flags=EXHAUST_ALLOWED),
    "checksum": reply(flags=CHECKSUM_PRESENT),
    "unknown required bit": reply(flags=1 << 4),
    "truncated": reply()[:-1],
    "two replies": reply() + reply(),
    "length field too small": struct.pack("<i", len(reply()) - 1) + reply()[4:],
    "length field too large": struct.pack("<i", len(reply()) + 1) + reply()[4:],
    "not OP_MSG": reply()[:12] + struct.pack("<i", 2004) + reply()[16:],
    "kind 1 first": reply()[:20] + b"\x01" + reply()[21:],
    "body length short": reply()[:21] + struct.pack("<i", len(BODY) - 1) + reply()[25:],
    "body not NUL-terminated": reply()[:-1] + b"\x01",
    "shorter than a header": reply()[:15],
    "body length too small": reply(body=b"\x04\x00\x00\x00"),
    "compressed": b"".join(
        encode_op_compressed(
            100, OpCode.OP_MSG, encode_op_msg_payload(BODY), Compressor.ZLIB, response_to=5
        )
    ),
}


@pytest.mark.parametrize("data", NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
def test_anything_else_is_left_to_next_reply(data: bytes) -> None:
    reader = expecting()
    assert reader.plain_reply(data) is None
    assert reader.expected_response_to == 5 and reader.buffered == 0
    reader.feed(data)
    try:
        reader.next_reply()
    except ProtocolError:
        pass


def test_a_reply_over_max_message_size_is_left_to_next_reply() -> None:
    data = reply()
    reader = expecting(max_message_size=len(data) - 1)
    assert reader.plain_reply(data) is None
    assert general(data, max_size=len(data) - 1) is ProtocolError
    assert expecting(max_message_size=len(data)).plain_reply(data) == BODY


def test_nothing_expected_is_not_plain() -> None:
    reader = expecting(None)
    assert reader.plain_reply(reply()) is None
    assert general(reply(), None) is ProtocolError


def test_not_after_a_partial_message() -> None:
    reader = expecting()
    reader.feed(reply()[:10])
    assert reader.plain_reply(reply()) is None
    assert reader.buffered == 10


def test_not_once_broken() -> None:
    reader = expecting()
    reader.feed(reply(response_to=6))
    with pytest.raises(ProtocolError):
        reader.next_reply()
    reader.expect(7)
    assert reader.plain_reply(reply(response_to=7)) is None
    with pytest.raises(ProtocolError):
        reader.next_reply()


def test_a_server_side_reader_never_takes_it() -> None:
    reader = MessageReader(check_response_to=False)
    assert reader.plain_reply(reply(response_to=0)) is None


def _mutations() -> st.SearchStrategy[bytes]:
    """Plain replies with a few bytes of the header/prefix/body changed, and random bytes."""
    base = st.builds(
        reply,
        st.sampled_from([5, 6]),
        st.sampled_from([BODY, bson.encode({}), bson.encode({"s": "x" * 40})]),
        st.sampled_from([0, 0, MORE_TO_COME, EXHAUST_ALLOWED, 1 << 8]),
    )
    edits = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 255)), max_size=3)

    def edit(data: bytes, changes: list[tuple[int, int]]) -> bytes:
        out = bytearray(data)
        for at, value in changes:
            if at < len(out):
                out[at] = value
        return bytes(out)

    return st.one_of(st.builds(edit, base, edits), st.binary(max_size=60))


@given(_mutations())
@settings(max_examples=400, deadline=None)
def test_plain_reply_agrees_with_next_reply(data: bytes) -> None:
    reader = expecting()
    body = reader.plain_reply(data)
    result = general(data)
    if body is None:
        # untouched: feed/next_reply read it exactly as without the shortcut
        assert reader.expected_response_to == 5 and reader.buffered == 0
    else:
        assert isinstance(result, OpMsg)
        assert (result.body, result.flags, result.sequences, result.response_to) == (
            body, 0, (), 5,
        )
        assert reader.expected_response_to is None
