"""Split write statements into OP_MSG document sequences that the server will accept.

A batch is bounded by ``maxWriteBatchSize`` statements and by ``maxMessageSizeBytes`` for the
whole message (header, flagBits, the kind-0 command and the kind-1 sequence). A single insert
document larger than ``maxBsonObjectSize`` (or an update/delete statement larger than that plus
the 16 KiB command allowance the server grants) can never be sent: DocumentTooLarge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from asyncmongo.core.wire.opcodes import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    HEADER_SIZE,
)
from asyncmongo.errors import ConfigurationError, DocumentTooLarge

#: Which command argument travels as the document sequence (OP_MSG spec table).
SEQUENCE_IDENTIFIERS = {"insert": "documents", "update": "updates", "delete": "deletes"}
#: The server accepts command documents this much larger than maxBsonObjectSize.
COMMAND_OVERHEAD = 16 * 1024


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """The server's limits from its handshake reply (defaults: the server defaults)."""

    max_bson_object_size: int = DEFAULT_MAX_BSON_OBJECT_SIZE
    max_message_size_bytes: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES
    max_write_batch_size: int = DEFAULT_MAX_WRITE_BATCH_SIZE
    #: Client-side encryption: statements per batch stop at this many bytes (2 MiB) before
    #: encryption grows them; a larger single statement is still sent, alone. None: no
    #: reduced split.
    batch_split_bytes: int | None = None


def message_overhead(command_name: str, command_size: int) -> int:
    """Bytes of an OP_MSG write besides its statements: header, flags, kind 0, kind-1 prefix."""
    identifier = _identifier(command_name)
    return HEADER_SIZE + 4 + 1 + command_size + 1 + 4 + len(identifier) + 1


def split_batches(
    command_name: str,
    statements: Sequence[bytes],
    command_size: int,
    limits: BatchLimits,
) -> list[range]:
    """Index ranges of ``statements``, one per message, in order.

    ``command_size`` is the encoded size of the kind-0 command sent with every batch.
    """
    max_statement = limits.max_bson_object_size
    if command_name != "insert":
        max_statement += COMMAND_OVERHEAD
    room = limits.max_message_size_bytes - message_overhead(command_name, command_size)
    split = room if limits.batch_split_bytes is None else min(room, limits.batch_split_bytes)
    batches: list[range] = []
    start, used = 0, 0
    for index, statement in enumerate(statements):
        size = len(statement)
        if size > max_statement or size > room:
            raise DocumentTooLarge(
                f"{command_name} statement {index} is {size} bytes, the limit is "
                f"{min(max_statement, room)}"
            )
        full = index - start >= limits.max_write_batch_size or (
            index > start and used + size > split)
        if full:
            batches.append(range(start, index))
            start, used = index, 0
        used += size
    if start < len(statements):
        batches.append(range(start, len(statements)))
    return batches


def _identifier(command_name: str) -> str:
    try:
        return SEQUENCE_IDENTIFIERS[command_name]
    except KeyError:
        raise ConfigurationError(f"{command_name!r} has no document sequence") from None
