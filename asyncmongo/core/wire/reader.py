"""A sans-I/O reader of wire messages: ``feed(bytes)`` in, ``next_reply()`` out (like h11).

It frames messages by their header, enforces ``maxMessageSizeBytes``, inflates OP_COMPRESSED,
decodes OP_MSG and checks that each reply answers the request it is waiting for: ``expect()``
names the request id, and after a ``moreToCome`` reply the next one must answer *that reply*
(OP_MSG spec, "moreToCome On Responses"). Any defect raises ProtocolError, after which the
reader stays broken: the connection must be closed, never read further.

:meth:`MessageReader.plain_reply` is the usual reply's shortcut: a received chunk that is
exactly one uncompressed, flag-less, one-section reply to the expected request yields that
reply's body without buffering, framing or an :class:`OpMsg`; anything else (a partial or
several messages, compression, flags, a defect) is left to ``feed``/``next_reply``.
"""

from __future__ import annotations

import struct

from asyncmongo.core.wire.compression import decode_op_compressed
from asyncmongo.core.wire.op_msg import OpMsg, decode_op_msg, plain_flags
from asyncmongo.core.wire.opcodes import (
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    HEADER,
    HEADER_SIZE,
    MORE_TO_COME,
    OpCode,
)
from asyncmongo.errors import ProtocolError

#: What :meth:`MessageReader.plain_reply` checks, in one unpack: a reply's messageLength,
#: (requestID skipped) responseTo, opCode and flagBits as one 8-byte integer (equal to
#: OP_MSG's opcode exactly when flagBits is 0), the first section's kind byte and its
#: document's length.
_unpack_plain_reply = struct.Struct("<i4xiQBi").unpack_from
#: The header, flagBits and kind byte before a plain reply's body.
_PLAIN_PREFIX_SIZE = HEADER_SIZE + 5
#: The shortest plain reply: the prefix and an empty document.
_PLAIN_MIN_SIZE = _PLAIN_PREFIX_SIZE + 5
#: What ``plain_flags`` reads of a message: the prefix and the body's size.
_PLAIN_PEEK_SIZE = _PLAIN_PREFIX_SIZE + 4
_OP_MSG = int(OpCode.OP_MSG)


class MessageReader:
    """Frames and decodes the messages a peer sends; see the module docstring.

    With ``check_response_to=False`` it reads requests instead (the test servers use that).
    """

    __slots__ = (
        "_broken",
        "_check",
        "_pieces",
        "_size",
        "expected_response_to",
        "max_message_size",
    )

    def __init__(
        self,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES,
        *,
        check_response_to: bool = True,
    ) -> None:
        self.max_message_size = max_message_size
        #: What was received and not yet framed, as received (``_size`` bytes in all): a
        #: message is joined from its pieces once it is whole, in one copy, where a growing
        #: bytearray would copy a 16 MB batch many times over as it reallocates.
        self._pieces: list[bytes] = []
        self._size = 0
        self._check = check_response_to
        #: The request id the next reply must answer (None: no reply is awaited); set it
        #: with :meth:`expect` (the connection assigns it directly on its hot path).
        self.expected_response_to: int | None = None
        self._broken: ProtocolError | None = None

    def __repr__(self) -> str:
        return (
            f"<MessageReader {self._size} bytes buffered, expecting "
            f"{self.expected_response_to}{', broken' if self._broken else ''}>"
        )

    @property
    def buffered(self) -> int:
        return self._size

    def expect(self, request_id: int | None) -> None:
        """Declare the request whose reply comes next (None: nothing may arrive)."""
        self.expected_response_to = request_id

    def plain_reply(self, data: bytes) -> bytes | None:
        """The body of ``data`` if it is exactly one plain reply, else None (then ``feed`` it).

        Plain: nothing buffered before it, not broken, within ``max_message_size``, an
        OP_MSG answering the expected request, flagBits 0 (no checksum, no moreToCome) and
        one kind-0 section filling the message. Every check ``next_reply`` makes, in one
        unpack and one expression: the usual reply skips the buffer, the copy out of it and
        the :class:`OpMsg`. Never raises: a defect is ``next_reply``'s to report.
        """
        size = len(data)
        if size < _PLAIN_MIN_SIZE or self._size or self._broken is not None:
            return None
        # one tuple comparison (in C): messageLength is the chunk's size, responseTo the
        # expected request, opCode OP_MSG with flagBits 0, kind 0, and the document fills
        # the rest of the message
        if (
            _unpack_plain_reply(data)
            == (size, self.expected_response_to, _OP_MSG, 0, size - _PLAIN_PREFIX_SIZE)
            and not data[-1]
            and size <= self.max_message_size
        ):
            self.expected_response_to = None
            return data[_PLAIN_PREFIX_SIZE:]
        return None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes received from the peer."""
        self._pieces.append(data if type(data) is bytes else bytes(data))
        self._size += len(data)

    def next_reply(self) -> OpMsg | None:
        """The next complete message, or None when more bytes are needed."""
        if self._broken is not None:
            raise self._broken
        try:
            return self._next()
        except ProtocolError as exc:
            self._broken = exc
            raise

    def _next(self) -> OpMsg | None:
        if self._size < HEADER_SIZE:
            return None
        pieces = self._pieces
        if len(pieces[0]) < HEADER_SIZE:  # a header split across receives
            pieces[:] = [b"".join(pieces)]
        length, request_id, response_to, opcode = HEADER.unpack_from(pieces[0], 0)
        if length < HEADER_SIZE or length > self.max_message_size:
            raise ProtocolError(
                f"message length {length} is outside [{HEADER_SIZE}, {self.max_message_size}]"
            )
        if self._size < length:
            return None
        first = pieces[0]
        flags = None
        if opcode == _OP_MSG and length >= _PLAIN_MIN_SIZE and len(first) >= _PLAIN_PEEK_SIZE:
            flags = plain_flags(first, HEADER_SIZE, length - HEADER_SIZE)
        if flags is not None:  # the usual reply: its body joined straight from the pieces
            body = self._take(length, _PLAIN_PREFIX_SIZE)
            self._check_response_to(response_to)
            if body[-1]:  # not a document's end: decode_op_msg names the defect
                body = first[HEADER_SIZE:_PLAIN_PREFIX_SIZE] + body
                message = decode_op_msg(request_id, response_to, body)
            else:
                message = OpMsg(request_id, response_to, flags, body)
        else:
            data = self._take(length, HEADER_SIZE)
            self._check_response_to(response_to)
            if opcode == OpCode.OP_COMPRESSED:
                opcode, data = decode_op_compressed(data, self.max_message_size)
            if opcode != OpCode.OP_MSG:
                raise ProtocolError(f"unexpected opcode {opcode} (only OP_MSG is spoken)")
            message = decode_op_msg(request_id, response_to, data)
        if self._check:
            self.expected_response_to = request_id if message.flags & MORE_TO_COME else None
        return message

    def _take(self, length: int, skip: int) -> bytes:
        """The next message (``length`` bytes, all received) without its first ``skip``
        bytes (all in the first piece), in one copy; what follows it stays buffered."""
        pieces = self._pieces
        end = 0  # the index of the piece the message ends in
        before = 0  # the bytes of the message in the pieces before it
        while before + len(pieces[end]) < length:
            before += len(pieces[end])
            end += 1
        last = pieces[end]
        cut = length - before  # the message's bytes in the last piece
        if end == 0:
            data = last[skip:length]
        else:
            parts = pieces[: end + 1]
            parts[0] = parts[0][skip:]
            if cut < len(last):
                parts[-1] = last[:cut]
            data = b"".join(parts)
        rest = pieces[end + 1 :]
        if cut < len(last):
            rest.insert(0, last[cut:])
        self._pieces = rest
        self._size -= length
        return data

    def _check_response_to(self, response_to: int) -> None:
        if not self._check:
            return
        if self.expected_response_to is None:
            raise ProtocolError(f"unsolicited message (responseTo {response_to})")
        if response_to != self.expected_response_to:
            raise ProtocolError(
                f"reply answers request {response_to}, expected {self.expected_response_to}"
            )
