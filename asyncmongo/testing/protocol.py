"""The server side of the wire protocol: requests in, reply bytes out (sans-I/O).

The core's :class:`~asyncmongo.core.wire.reader.MessageReader` reads OP_MSG replies; a server
must also read the legacy OP_QUERY that drivers still use for their first ``hello``
(``isMaster``), and answer it with OP_REPLY. This module frames requests, decodes them with the
core's functions (``decode_op_msg``, ``decode_op_compressed``) and encodes replies the way
``mongod`` does: OP_MSG (optionally ``moreToCome``), OP_REPLY for OP_QUERY, and OP_COMPRESSED
with the compressor the request itself used.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson import DBRef, decode, encode
from asyncmongo.bson.errors import BSONError
from asyncmongo.core.wire.compression import (
    COMPRESSED_PREFIX,
    Compressor,
    decode_op_compressed,
    encode_op_compressed,
    may_compress,
)
from asyncmongo.core.wire.op_msg import decode_op_msg, encode_op_msg, encode_op_msg_payload
from asyncmongo.core.wire.opcodes import (
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    HEADER,
    HEADER_SIZE,
    OpCode,
    OpMsgFlags,
)
from asyncmongo.errors import ProtocolError

_INT32 = struct.Struct("<i")
_OP_REPLY_PREFIX = struct.Struct("<iqii")  # responseFlags, cursorID, startingFrom, numberReturned
#: OP_REPLY responseFlags: AwaitCapable, as mongod sets it on every command reply.
_AWAIT_CAPABLE = 8


@dataclass(frozen=True, slots=True)
class Request:
    """One decoded client request.

    ``command`` is the body with every OP_MSG document sequence folded in as an array (as the
    server sees it), still carrying ``$db``; ``db`` is the database it runs against.
    ``compressor`` is the compressor of the request (None: it was not compressed), which the
    reply reuses.
    """

    request_id: int
    opcode: OpCode
    db: str
    command: dict[str, Any]
    flags: int = 0
    compressor: Compressor | None = None

    @property
    def name(self) -> str:
        """The command name: the first key of the command document."""
        return next(iter(self.command), "")

    @property
    def exhaust_allowed(self) -> bool:
        return self.opcode is OpCode.OP_MSG and bool(self.flags & OpMsgFlags.EXHAUST_ALLOWED)

    @property
    def more_to_come(self) -> bool:
        """The client expects no reply (an unacknowledged write)."""
        return self.opcode is OpCode.OP_MSG and bool(self.flags & OpMsgFlags.MORE_TO_COME)


def read_header(header: bytes, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES) -> int:
    """The total length a 16-byte header announces, checked against the size limit."""
    length: int = HEADER.unpack(header)[0]
    if length < HEADER_SIZE or length > max_message_size:
        raise ProtocolError(f"message length {length} is outside [{HEADER_SIZE}, "
                            f"{max_message_size}]")
    return length


def decode_request(message: bytes, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES
                   ) -> Request:
    """Decode one complete message (header included); any defect is a ProtocolError."""
    if len(message) < HEADER_SIZE:
        raise ProtocolError("message shorter than its header")
    _, request_id, response_to, opcode = HEADER.unpack_from(message, 0)
    data = message[HEADER_SIZE:]
    compressor: Compressor | None = None
    if opcode == OpCode.OP_COMPRESSED:
        compressor_id = COMPRESSED_PREFIX.unpack_from(data, 0)[2] if len(data) >= 9 else -1
        opcode, data = decode_op_compressed(data, max_message_size)
        compressor = Compressor(compressor_id)
    if opcode == OpCode.OP_MSG:
        return _from_op_msg(request_id, response_to, data, compressor)
    if opcode == OpCode.OP_QUERY:
        return _from_op_query(request_id, data, compressor)
    raise ProtocolError(f"unsupported opcode {opcode}")


def _from_op_msg(request_id: int, response_to: int, data: bytes,
                 compressor: Compressor | None) -> Request:
    msg = decode_op_msg(request_id, response_to, data)
    command = _decode_document(msg.body)
    for sequence in msg.sequences:
        if sequence.identifier in command:
            raise ProtocolError(f"OP_MSG field {sequence.identifier!r} is both in the body and "
                                "a document sequence")
        command[sequence.identifier] = [_decode_document(doc) for doc in sequence.documents]
    db = command.get("$db")
    if not isinstance(db, str):
        raise ProtocolError("OP_MSG command has no $db string")
    return Request(request_id, OpCode.OP_MSG, db, command, msg.flags, compressor)


def _from_op_query(request_id: int, data: bytes, compressor: Compressor | None) -> Request:
    """OP_QUERY: flags, fullCollectionName, numberToSkip, numberToReturn, query[, fields]."""
    if len(data) < 4:
        raise ProtocolError("OP_QUERY too short")
    nul = data.find(b"\x00", 4)
    if nul < 0:
        raise ProtocolError("OP_QUERY collection name is not terminated")
    namespace = data[4:nul].decode("utf-8", "replace")
    pos = nul + 1 + 8
    if pos + 4 > len(data):
        raise ProtocolError("OP_QUERY truncated before its query")
    size = _INT32.unpack_from(data, pos)[0]
    if size < 5 or pos + size > len(data):
        raise ProtocolError(f"OP_QUERY query has a bad length {size}")
    query = _decode_document(data[pos:pos + size])
    if "$query" in query and isinstance(query["$query"], Mapping):
        query = dict(query["$query"])
    db = namespace.split(".", 1)[0]
    return Request(request_id, OpCode.OP_QUERY, db, query, _INT32.unpack_from(data, 0)[0],
                   compressor)


def _decode_document(data: bytes) -> dict[str, Any]:
    try:
        document = decode(data)
    except BSONError as exc:
        raise ProtocolError(f"invalid BSON in a request: {exc}") from exc
    if not isinstance(document, dict):
        raise ProtocolError("a request document did not decode to a dict")
    if b"$ref\x00" in data:
        plain: dict[str, Any] = _plain_dbrefs(document)
        return plain
    return document


def _plain_dbrefs(value: Any) -> Any:
    """mongod has no DBRef type: ``{$ref, $id, $db}`` is a document its queries and
    ``$lookup`` paths (``"door.$id"``) walk into, so the decoder's DBRefs become documents."""
    if isinstance(value, DBRef):
        return _plain_dbrefs(value.as_doc())
    if isinstance(value, dict):
        return {key: _plain_dbrefs(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_dbrefs(item) for item in value]
    return value


def encode_reply(request: Request, request_id: int, reply: Mapping[str, Any], *,
                 more_to_come: bool = False, response_to: int | None = None) -> bytes:
    """The reply to ``request`` as bytes: OP_REPLY for OP_QUERY, otherwise OP_MSG, compressed
    with the request's compressor unless the command is on the never-compress list."""
    body = encode(reply)
    answer_to = request.request_id if response_to is None else response_to
    if request.opcode is OpCode.OP_QUERY:
        original = OpCode.OP_REPLY
        payload = [_OP_REPLY_PREFIX.pack(_AWAIT_CAPABLE, 0, 0, 1), body]
    else:
        original = OpCode.OP_MSG
        flags = int(OpMsgFlags.MORE_TO_COME) if more_to_come else 0
        if request.compressor is None or not may_compress(request.name):
            return b"".join(encode_op_msg(request_id, body, flags=flags, response_to=answer_to))
        payload = encode_op_msg_payload(body, flags=flags)
    if request.compressor is not None and may_compress(request.name):
        return b"".join(encode_op_compressed(request_id, original, payload, request.compressor,
                                             response_to=answer_to))
    length = HEADER_SIZE + sum(map(len, payload))
    return b"".join([HEADER.pack(length, request_id, answer_to, original), *payload])
