"""OP_MSG encoding and decoding (OP_MSG spec).

Documents travel as already-encoded BSON ``bytes``: this module frames them and nothing else,
so it stays independent of the codec and never copies a document more than once. Encoders
return a list of buffers for ``transport.writelines``; the decoder takes the bytes after the
16-byte header and validates every section.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from asyncmongo.core.wire.crc32c import crc32c
from asyncmongo.core.wire.opcodes import (
    CHECKSUM_PRESENT,
    EXHAUST_ALLOWED,
    HEADER,
    HEADER_SIZE,
    KNOWN_REQUIRED_FLAGS,
    MORE_TO_COME,
    REQUIRED_FLAGS_MASK,
    OpCode,
)
from asyncmongo.errors import ProtocolError

_INT32 = struct.Struct("<i")
_UINT32 = struct.Struct("<I")
_MIN_DOCUMENT_SIZE = 5
_KIND_BODY = b"\x00"
_OP_MSG = int(OpCode.OP_MSG)
#: flagBits 0 and the body's kind byte: the payload prefix of almost every request.
_NO_FLAGS_BODY = b"\x00\x00\x00\x00" + _KIND_BODY
#: The header, flagBits and kind byte before the body.
_BODY_OFFSET = HEADER_SIZE + 5
#: The usual request's header, flagBits and kind byte (messageLength, requestID, responseTo,
#: opCode, flagBits 0, kind 0), packed at once: a command with one kind-0 section and no
#: flags is this and its body.
REQUEST_PREFIX = struct.Struct("<iiiiIB")
#: A kind-1 section's kind byte and size.
_pack_sequence_prefix = struct.Struct("<Bi").pack
#: The usual reply: flagBits, kind 0, the body's length.
_FLAGS_KIND_SIZE = struct.Struct("<IBi")
#: Flag bits that send a reply down the full decoder (a checksum, or bits it refuses).
_SLOW_FLAGS = CHECKSUM_PRESENT | (REQUIRED_FLAGS_MASK & ~KNOWN_REQUIRED_FLAGS)


class DocumentSequence:
    """An OP_MSG payload type 1 section: ``identifier`` and encoded BSON documents.

    A plain ``__slots__`` class rather than a frozen dataclass: every write command builds
    one, and a frozen dataclass's ``__init__`` costs an ``object.__setattr__`` call per
    field. Treat it as immutable all the same (equality, hash and repr are the dataclass's).
    """

    __slots__ = ("documents", "identifier")

    def __init__(self, identifier: str, documents: Sequence[bytes]) -> None:
        self.identifier = identifier
        self.documents = documents

    def __repr__(self) -> str:
        return f"DocumentSequence(identifier={self.identifier!r}, documents={self.documents!r})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, DocumentSequence)
        return (self.identifier, self.documents) == (other.identifier, other.documents)

    def __hash__(self) -> int:
        return hash((self.identifier, self.documents))

    def encoded_size(self) -> int:
        """Bytes on the wire, including the kind byte."""
        return 1 + 4 + len(self.identifier.encode()) + 1 + sum(map(len, self.documents))


class OpMsg:
    """A decoded OP_MSG: the kind-0 ``body`` and any kind-1 sequences, still as BSON bytes.

    A plain ``__slots__`` class rather than a frozen dataclass: every reply builds one, and
    a frozen dataclass's ``__init__`` costs an ``object.__setattr__`` call per field. Treat
    it as immutable all the same.
    """

    __slots__ = ("body", "flags", "request_id", "response_to", "sequences")

    def __init__(
        self,
        request_id: int,
        response_to: int,
        flags: int,
        body: bytes,
        sequences: tuple[DocumentSequence, ...] = (),
    ) -> None:
        self.request_id = request_id
        self.response_to = response_to
        self.flags = flags
        self.body = body
        self.sequences = sequences

    def _fields(self) -> tuple[int, int, int, bytes, tuple[DocumentSequence, ...]]:
        return (self.request_id, self.response_to, self.flags, self.body, self.sequences)

    def __repr__(self) -> str:
        return (
            f"OpMsg(request_id={self.request_id!r}, response_to={self.response_to!r}, "
            f"flags={self.flags!r}, body={self.body!r}, sequences={self.sequences!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpMsg):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    @property
    def more_to_come(self) -> bool:
        """The sender will send another message (exhaust) and expects no request meanwhile."""
        return bool(self.flags & MORE_TO_COME)

    @property
    def exhaust_allowed(self) -> bool:
        return bool(self.flags & EXHAUST_ALLOWED)


def encode_op_msg_payload(
    body: bytes, sequences: Sequence[DocumentSequence] = (), flags: int = 0
) -> list[bytes]:
    """The OP_MSG after its header (flagBits and sections): what OP_COMPRESSED wraps."""
    return encode_op_msg(0, body, sequences, flags)[1:]


def encode_op_msg(
    request_id: int,
    body: bytes,
    sequences: Sequence[DocumentSequence] = (),
    flags: int = 0,
    response_to: int = 0,
) -> list[bytes]:
    """A complete OP_MSG as buffers for ``writelines``: the header, then the payload's
    buffers (what OP_COMPRESSED wraps)."""
    return encode_op_msg_sized(request_id, body, sequences, flags, response_to)[0]


def encode_op_msg_sized(
    request_id: int,
    body: bytes,
    sequences: Sequence[DocumentSequence] = (),
    flags: int = 0,
    response_to: int = 0,
) -> tuple[list[bytes], int]:
    """:func:`encode_op_msg` and the message's size (its messageLength, the buffers' total
    length), for a sender that checks it against maxMessageSizeBytes. One pass: each
    section's size is added up as the section is framed, and the header packed last."""
    length = _BODY_OFFSET + len(body)
    if not flags:
        if not sequences:  # every command but bulk writes and exhaust
            header = HEADER.pack(length, request_id, response_to, _OP_MSG)
            return [header, _NO_FLAGS_BODY, body], length
        buffers = [b"", _NO_FLAGS_BODY, body]
    elif flags & CHECKSUM_PRESENT:
        raise ProtocolError("asyncmongo never sends OP_MSG checksums")
    else:
        buffers = [b"", _UINT32.pack(flags) + _KIND_BODY, body]
    for seq in sequences:
        documents = seq.documents
        identifier, size = _SEQUENCE_HEADS.get(seq.identifier) or _sequence_head(seq.identifier)
        size += sum(map(len, documents))
        buffers.append(_pack_sequence_prefix(1, size) + identifier)
        buffers += documents
        length += size + 1
    buffers[0] = HEADER.pack(length, request_id, response_to, _OP_MSG)
    return buffers, length


def _sequence_head(identifier: str) -> tuple[bytes, int]:
    """A kind-1 section's identifier as sent and its size before the documents (see
    ``_SEQUENCE_HEADS``, which holds the write commands')."""
    encoded = identifier.encode() + b"\x00"
    return encoded, 4 + len(encoded)


#: A kind-1 section's head for each write command's identifier: the identifier as sent (a C
#: string) and the section's size before its documents (the size field and the C string).
_SEQUENCE_HEADS = {name: _sequence_head(name) for name in ("documents", "updates", "deletes")}


def plain_flags(message: bytes, offset: int, length: int) -> int | None:
    """The flagBits of the OP_MSG at ``message[offset:]`` (``length`` bytes after its
    header, at least the first 9 of them in ``message``) when it is the usual reply: known
    flags, no checksum, one kind-0 section filling the message, so that its body is the
    rest of the message after these 5 bytes. None otherwise (``decode_op_msg`` decides).
    The body's last byte is not checked here: it may not be received yet."""
    flags, kind, size = _FLAGS_KIND_SIZE.unpack_from(message, offset)
    if kind == 0 and not flags & _SLOW_FLAGS and size == length - 5:
        return int(flags)
    return None


def decode_op_msg(request_id: int, response_to: int, data: bytes | memoryview) -> OpMsg:
    """Decode an OP_MSG from the bytes after its header; any defect is a ProtocolError."""
    if type(data) is bytes and len(data) >= 10:
        # the usual reply: its body is the rest after flagBits and the kind byte
        flags = plain_flags(data, 0, len(data))
        if flags is not None and not data[-1]:
            return OpMsg(request_id, response_to, flags, data[5:])
    view = memoryview(data)
    if len(view) < 4:
        raise ProtocolError("OP_MSG too short for its flagBits")
    (flags,) = _UINT32.unpack_from(view, 0)
    unknown = flags & REQUIRED_FLAGS_MASK & ~KNOWN_REQUIRED_FLAGS
    if unknown:
        raise ProtocolError(f"OP_MSG has unsupported required flag bits 0x{unknown:04x}")
    end = len(view)
    if flags & CHECKSUM_PRESENT:
        end = _verify_checksum(request_id, response_to, view)
    body, sequences = _decode_sections(view[4:end])
    return OpMsg(request_id, response_to, flags, body, sequences)


def _verify_checksum(request_id: int, response_to: int, view: memoryview) -> int:
    """Check the trailing CRC-32C (computed over the whole message, header included)."""
    end = len(view) - 4
    if end < 4:
        raise ProtocolError("OP_MSG too short for its checksum")
    (expected,) = _UINT32.unpack_from(view, end)
    header = HEADER.pack(HEADER_SIZE + len(view), request_id, response_to, OpCode.OP_MSG)
    actual = crc32c(view[:end], crc32c(header))
    if actual != expected:
        raise ProtocolError(f"OP_MSG checksum mismatch: 0x{actual:08x} != 0x{expected:08x}")
    return end


def _decode_sections(view: memoryview) -> tuple[bytes, tuple[DocumentSequence, ...]]:
    body: bytes | None = None
    sequences: list[DocumentSequence] = []
    pos = 0
    while pos < len(view):
        kind = view[pos]
        pos += 1
        if kind == 0:
            if body is not None:
                raise ProtocolError("OP_MSG has more than one payload type 0 section")
            size = _document_size(view, pos, len(view))
            body = bytes(view[pos : pos + size])
            pos += size
        elif kind == 1:
            seq, pos = _decode_sequence(view, pos)
            if any(s.identifier == seq.identifier for s in sequences):
                raise ProtocolError(f"OP_MSG repeats the sequence identifier {seq.identifier!r}")
            sequences.append(seq)
        else:
            raise ProtocolError(f"OP_MSG has an unknown payload type {kind}")
    if body is None:
        raise ProtocolError("OP_MSG has no payload type 0 section")
    return body, tuple(sequences)


def _decode_sequence(view: memoryview, pos: int) -> tuple[DocumentSequence, int]:
    if pos + 4 > len(view):
        raise ProtocolError("OP_MSG document sequence truncated")
    (size,) = _INT32.unpack_from(view, pos)
    end = pos + size
    if size < 5 or end > len(view):
        raise ProtocolError(f"OP_MSG document sequence has a bad size {size}")
    nul = bytes(view[pos + 4 : end]).find(b"\x00")
    if nul < 0:
        raise ProtocolError("OP_MSG document sequence identifier is not terminated")
    try:
        identifier = bytes(view[pos + 4 : pos + 4 + nul]).decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError("OP_MSG document sequence identifier is not UTF-8") from exc
    docs: list[bytes] = []
    doc_pos = pos + 4 + nul + 1
    while doc_pos < end:
        doc_size = _document_size(view, doc_pos, end)
        docs.append(bytes(view[doc_pos : doc_pos + doc_size]))
        doc_pos += doc_size
    return DocumentSequence(identifier, tuple(docs)), end


def _document_size(view: memoryview, pos: int, end: int) -> int:
    """The size of the BSON document at ``pos``, checked to fit before ``end``."""
    if pos + 4 > end:
        raise ProtocolError("OP_MSG section truncated before its document length")
    size: int = _INT32.unpack_from(view, pos)[0]
    if size < _MIN_DOCUMENT_SIZE or pos + size > end:
        raise ProtocolError(f"OP_MSG section has a bad document length {size}")
    if view[pos + size - 1] != 0:
        raise ProtocolError("OP_MSG section document is not NUL-terminated")
    return size
