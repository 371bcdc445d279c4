"""What every operation is: a command to build, a reply to parse, and where it may run.

An operation object (one module per command family, as in the mongo-rust-driver) is pure:
``build(connection)`` returns the :class:`Command` to send (it may look at the connection's
limits and wire version, never at a socket) and ``parse(reply)`` turns the reply into the
result or raises the typed error. The executor owns everything in between: server selection
(from :attr:`Operation.selection`), checkout, sending, SDAM error handling and (later) retries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from asyncmongo.core.address import Address
from asyncmongo.core.selection import ReadPreference, Selection
from asyncmongo.core.wire.op_msg import DocumentSequence

__all__ = [
    "Command",
    "ConnectionInfo",
    "Operation",
    "Target",
]

T_co = TypeVar("T_co", covariant=True)


class ConnectionInfo(Protocol):
    """What ``build`` may know of the connection it will run on (a runtime Connection is one)."""

    @property
    def max_wire_version(self) -> int: ...

    @property
    def max_bson_object_size(self) -> int: ...

    @property
    def max_message_size_bytes(self) -> int: ...

    @property
    def max_write_batch_size(self) -> int: ...


class Command:
    """One command to send: database, kind-0 document, kind-1 sequences, w:0 flag.

    ``unacknowledged`` sends the request with moreToCome and expects no reply (w:0 writes).

    A plain ``__slots__`` class rather than a frozen dataclass: one is built per operation
    attempt, and a frozen dataclass's ``__init__`` costs an ``object.__setattr__`` call per
    field. Treat it as immutable all the same (build a new one to change a field).
    """

    __slots__ = ("database", "document", "sequences", "unacknowledged")

    def __init__(
        self,
        database: str,
        document: dict[str, Any],
        sequences: tuple[DocumentSequence, ...] = (),
        unacknowledged: bool = False,
    ) -> None:
        self.database = database
        self.document = document
        self.sequences = sequences
        self.unacknowledged = unacknowledged

    def __repr__(self) -> str:
        return (
            f"Command(database={self.database!r}, document={self.document!r}, "
            f"sequences={self.sequences!r}, unacknowledged={self.unacknowledged!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Command):
            return NotImplemented
        return (self.database, self.document, self.sequences, self.unacknowledged) == (
            other.database,
            other.document,
            other.sequences,
            other.unacknowledged,
        )

    __hash__ = None  # type: ignore[assignment]  # the document is a dict

    @property
    def name(self) -> str:
        return next(iter(self.document))


@dataclass(frozen=True, slots=True)
class Target:
    """Where an operation may run: a selection, or one pinned server (getMore, killCursors).

    ``write_stage`` marks an aggregate with $out/$merge: the executor applies CRUD's rule
    (``asyncmongo.core.selection.write_stage_read_preference``) to the topology it sees.
    """

    selection: Selection
    address: Address | None = None
    write_stage: bool = False

    @classmethod
    def read(cls, read_preference: ReadPreference) -> Target:
        if cls is not Target:
            return cls(Selection.read(read_preference))
        target = read_preference._read_target  # both immutable: one target per preference
        if type(target) is Target:
            return target
        target = cls(Selection.read(read_preference))
        object.__setattr__(read_preference, "_read_target", target)
        return target

    @classmethod
    def write(cls) -> Target:
        return _WRITE if cls is Target else cls(Selection.write())

    @classmethod
    def pinned(cls, address: Address) -> Target:
        return cls(Selection.write(), address)


_WRITE = Target(Selection.write())


class Operation(Protocol[T_co]):
    """The interface the executor runs: ``await executor.run(op)`` returns ``op.parse(reply)``."""

    @property
    def name(self) -> str:
        """The command name (for logging and errors)."""
        ...

    @property
    def target(self) -> Target: ...

    @property
    def codec_options(self) -> CodecOptions:
        """How to decode the reply."""
        ...

    def build(self, conn: ConnectionInfo) -> Command: ...

    def parse(self, reply: Mapping[str, Any]) -> T_co: ...


DEFAULT_CODEC = DEFAULT_CODEC_OPTIONS
#: MongoDB 8.2: the ``rawData`` option (time-series buckets as stored); never sent before it.
RAW_DATA_WIRE_VERSION = 27


def with_raw_data(
    document: dict[str, Any], raw_data: bool | None, conn: ConnectionInfo
) -> dict[str, Any]:
    """CRUD: ``rawData`` "MUST NOT be sent when connected to pre-8.2 servers"."""
    if raw_data is None or conn.max_wire_version < RAW_DATA_WIRE_VERSION:
        return document
    return {**document, "rawData": raw_data}
