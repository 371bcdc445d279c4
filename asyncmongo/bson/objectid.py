"""ObjectId: the 12-byte default ``_id`` of MongoDB (specs/bson-objectid).

Layout: 4-byte big-endian seconds since the epoch, a 5-byte random value unique to the
process (regenerated after ``fork``), a 3-byte big-endian counter that starts at a random
value and wraps at 2**24. The clock is the compiled codec's ``time(2)`` when it is built,
else :mod:`datetime`'s (the pure core never imports :mod:`time`); the random parts come from
:func:`os.urandom`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from asyncmongo.bson.errors import InvalidId

__all__ = ["ObjectId"]

_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_COUNTER_MASK: Final = 0xFFFFFF


class _Generator:
    """Per-process state of ObjectId generation (spec: random value + counter).

    Generating an id asks the OS for the time only: a forked child draws its process value
    again in an ``os.register_at_fork`` hook, and the clock is the compiled codec's ``seconds``
    (``time(2)``) when it is built, else :func:`_now_seconds`. ``insert_many`` makes one id
    per document, so this is on the path of every inserted document without an ``_id``.
    """

    __slots__ = ("clock", "counter", "process")

    def __init__(self) -> None:
        #: Whole seconds since the epoch; resolved on the first id (the compiled codec
        #: imports this module, so it cannot be imported while this module loads).
        self.clock: Callable[[], int] = self._first_clock
        self.counter = itertools.count(int.from_bytes(os.urandom(3), "big"))
        self.reseed()

    def reseed(self) -> None:
        """A new process-unique value, in place in the id (spec: a forked child's differs)."""
        self.process = int.from_bytes(os.urandom(5), "big") << 24

    def _first_clock(self) -> int:
        clock: Callable[[], int]
        try:
            from asyncmongo.bson import _cencode

            clock = _cencode.seconds
        except ImportError:
            clock = _now_seconds
        self.clock = clock
        return clock()

    def next_oid(self) -> bytes:
        """A new id's 12 bytes: seconds (4, unsigned, wrapping in 2106), the process value
        (5) and the counter (3, wrapping at 2**24), all big-endian."""
        count = next(self.counter) & _COUNTER_MASK
        return (((self.clock() & 0xFFFFFFFF) << 64) | self.process | count).to_bytes(12, "big")


_GENERATOR: Final = _Generator()
if hasattr(os, "register_at_fork"):  # POSIX: the only systems that fork
    os.register_at_fork(after_in_child=_GENERATOR.reseed)

#: A new ObjectId's 12 bytes, as ``ObjectId()`` holds them (for another ObjectId class:
#: PyMongo's, under the PyMongo-compatible client).
new_object_id_bytes: Final[Callable[[], bytes]] = _GENERATOR.next_oid


def _now_seconds() -> int:
    """Whole seconds since the epoch without the compiled codec (the pure core reads the
    clock through :mod:`datetime`, never :mod:`time`)."""
    return int(datetime.now(UTC).timestamp())


class ObjectId:
    """A 12-byte BSON ObjectId.

    ``ObjectId()`` generates a new id; ``ObjectId("24 hex chars")``, ``ObjectId(12 bytes)`` and
    ``ObjectId(other_oid)`` parse one. Ordered and hashed by its bytes.
    """

    # The codec reads and sets ``_binary`` directly: it is on the hot path of every document.
    __slots__ = ("_binary",)

    def __init__(self, oid: str | bytes | ObjectId | None = None) -> None:
        if oid is None:
            self._binary = _GENERATOR.next_oid()
        elif type(oid) is bytes:
            if len(oid) != 12:
                raise InvalidId(f"{oid!r} is not a valid ObjectId: it must be 12 bytes")
            self._binary = oid
        elif isinstance(oid, ObjectId):
            self._binary = oid.binary
        elif isinstance(oid, str):
            self._binary = _parse_hex(oid)
        elif isinstance(oid, bytes | bytearray | memoryview):
            raw = bytes(oid)
            if len(raw) != 12:
                raise InvalidId(f"{oid!r} is not a valid ObjectId: it must be 12 bytes")
            self._binary = raw
        else:
            raise TypeError(
                f"id must be an ObjectId, 12 bytes or a 24-character hex string, "
                f"not {type(oid).__name__}"
            )

    @classmethod
    def _from_bytes(cls, raw: bytes) -> ObjectId:
        """Build from exactly 12 trusted bytes without validation (the decoder's fast path)."""
        oid = cls.__new__(cls)
        oid._binary = raw
        return oid

    @classmethod
    def from_datetime(cls, generation_time: datetime) -> ObjectId:
        """An ObjectId whose timestamp is ``generation_time`` and whose other bytes are zero.

        Useful only for range queries on ``_id``; never insert it (it is not unique). A naive
        datetime is taken as UTC.
        """
        if generation_time.tzinfo is not None:
            offset = generation_time.utcoffset()
            if offset is not None:
                generation_time = generation_time - offset
        seconds = int((generation_time.replace(tzinfo=None) - _EPOCH_NAIVE).total_seconds())
        if not 0 <= seconds <= 0xFFFFFFFF:
            raise InvalidId(f"{generation_time!r} is outside the ObjectId timestamp range")
        return cls._from_bytes(seconds.to_bytes(4, "big") + b"\x00" * 8)

    @classmethod
    def is_valid(cls, oid: Any) -> bool:
        """True if ``oid`` can be turned into an ObjectId (never raises)."""
        if oid is None:
            return False
        try:
            cls(oid)
        except (InvalidId, TypeError):
            return False
        return True

    @property
    def binary(self) -> bytes:
        """The 12 bytes of this ObjectId."""
        return self._binary

    @property
    def generation_time(self) -> datetime:
        """The creation time (whole seconds) as an aware UTC datetime; unsigned per spec."""
        seconds = int.from_bytes(self._binary[:4], "big")
        return datetime.fromtimestamp(seconds, UTC)

    def __str__(self) -> str:
        return self._binary.hex()

    def __repr__(self) -> str:
        return f"ObjectId('{self._binary.hex()}')"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._binary == other.binary
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._binary != other.binary
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._binary < other.binary
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._binary <= other.binary
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._binary > other.binary
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if isinstance(other, ObjectId):
            return self._binary >= other.binary
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._binary)

    def __copy__(self) -> ObjectId:
        return self

    def __deepcopy__(self, memo: Any) -> ObjectId:
        return self

    def __reduce__(self) -> tuple[type[ObjectId], tuple[bytes]]:
        return (ObjectId, (self._binary,))


_EPOCH_NAIVE: Final = datetime(1970, 1, 1)


def _parse_hex(text: str) -> bytes:
    if len(text) != 24 or not _HEX_DIGITS.issuperset(text):
        raise InvalidId(
            f"{text!r} is not a valid ObjectId: it must be 12 bytes or a 24-character hex string"
        )
    return bytes.fromhex(text)
