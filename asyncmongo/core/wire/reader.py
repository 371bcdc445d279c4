"""A sans-I/O reader of wire messages: ``feed(bytes)`` in, ``next_reply()`` out (like h11).

It frames messages by their header, enforces ``maxMessageSizeBytes``, inflates OP_COMPRESSED,
decodes OP_MSG and checks that each reply answers the request it is waiting for: ``expect()``
names the request id, and after a ``moreToCome`` reply the next one must answer *that reply*
(OP_MSG spec, "moreToCome On Responses"). Any defect raises ProtocolError, after which the
reader stays broken: the connection must be closed, never read further.
"""

from __future__ import annotations

from asyncmongo.core.wire.compression import decode_op_compressed
from asyncmongo.core.wire.op_msg import OpMsg, decode_op_msg
from asyncmongo.core.wire.opcodes import (
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    HEADER,
    HEADER_SIZE,
    OpCode,
)
from asyncmongo.errors import ProtocolError


class MessageReader:
    """Frames and decodes the messages a peer sends; see the module docstring.

    With ``check_response_to=False`` it reads requests instead (the test servers use that).
    """

    __slots__ = ("_broken", "_buffer", "_check", "_expected", "max_message_size")

    def __init__(
        self,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES,
        *,
        check_response_to: bool = True,
    ) -> None:
        self.max_message_size = max_message_size
        self._buffer = bytearray()
        self._check = check_response_to
        self._expected: int | None = None
        self._broken: ProtocolError | None = None

    def __repr__(self) -> str:
        return (
            f"<MessageReader {len(self._buffer)} bytes buffered, expecting "
            f"{self._expected}{', broken' if self._broken else ''}>"
        )

    @property
    def expected_response_to(self) -> int | None:
        """The request id the next reply must answer (None: no reply is awaited)."""
        return self._expected

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def expect(self, request_id: int | None) -> None:
        """Declare the request whose reply comes next (None: nothing may arrive)."""
        self._expected = request_id

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes received from the peer."""
        self._buffer += data

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
        buf = self._buffer
        if len(buf) < HEADER_SIZE:
            return None
        length, request_id, response_to, opcode = HEADER.unpack_from(buf, 0)
        if length < HEADER_SIZE or length > self.max_message_size:
            raise ProtocolError(
                f"message length {length} is outside [{HEADER_SIZE}, {self.max_message_size}]"
            )
        if len(buf) < length:
            return None
        with memoryview(buf) as view:  # one copy of the message body, not two
            data = bytes(view[HEADER_SIZE:length])
        del buf[:length]
        self._check_response_to(response_to)
        if opcode == OpCode.OP_COMPRESSED:
            opcode, data = decode_op_compressed(data, self.max_message_size)
        if opcode != OpCode.OP_MSG:
            raise ProtocolError(f"unexpected opcode {opcode} (only OP_MSG is spoken)")
        message = decode_op_msg(request_id, response_to, data)
        if self._check:
            self._expected = request_id if message.more_to_come else None
        return message

    def _check_response_to(self, response_to: int) -> None:
        if not self._check:
            return
        if self._expected is None:
            raise ProtocolError(f"unsolicited message (responseTo {response_to})")
        if response_to != self._expected:
            raise ProtocolError(f"reply answers request {response_to}, expected {self._expected}")
