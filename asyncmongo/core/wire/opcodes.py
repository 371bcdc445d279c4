"""Wire-protocol constants: opcodes, the message header and OP_MSG flag bits.

Every message starts with the 16-byte ``MsgHeader`` (messageLength, requestID, responseTo,
opCode), all little-endian int32 (OP_MSG spec, "Wire protocol").
"""

from __future__ import annotations

import enum
import struct

#: ``MsgHeader``: messageLength, requestID, responseTo, opCode.
HEADER = struct.Struct("<iiii")
HEADER_SIZE = HEADER.size

#: The server default for ``maxMessageSizeBytes`` (used until a handshake says otherwise).
DEFAULT_MAX_MESSAGE_SIZE_BYTES = 48_000_000
#: The server default for ``maxBsonObjectSize``.
DEFAULT_MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
#: The server default for ``maxWriteBatchSize``.
DEFAULT_MAX_WRITE_BATCH_SIZE = 100_000


class OpCode(enum.IntEnum):
    """The opcodes this driver reads or writes."""

    OP_REPLY = 1
    OP_QUERY = 2004
    OP_COMPRESSED = 2012
    OP_MSG = 2013


class OpMsgFlags(enum.IntFlag):
    """OP_MSG ``flagBits``. The low 16 bits are required bits: unknown ones are an error."""

    NONE = 0
    CHECKSUM_PRESENT = 1 << 0
    MORE_TO_COME = 1 << 1
    EXHAUST_ALLOWED = 1 << 16


#: The same bits as plain ints, for the hot paths (IntFlag arithmetic allocates members).
CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16

#: Required (low 16) bits this driver understands; any other required bit is a protocol error.
KNOWN_REQUIRED_FLAGS = CHECKSUM_PRESENT | MORE_TO_COME
REQUIRED_FLAGS_MASK = 0xFFFF
