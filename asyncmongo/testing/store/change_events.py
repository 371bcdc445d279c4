"""The change event log: what change streams read, fed by every write path of the store.

Each committed change (a document inserted, updated, replaced or deleted; a collection
created, dropped, renamed or modified; an index created or dropped; a database dropped) is
appended as a :class:`ChangeEvent` with its own sequence number and cluster time, as mongod
writes an oplog entry. Collections call :meth:`ChangeLog.document_changed` (a transaction's
writes reach the log when it commits, through the real collection); the catalog and the
DDL commands call the other ``record`` methods. ``store/change_streams.py`` turns the log into
the events a ``$changeStream`` cursor returns.

A position in the log is ``(seq, kind)``: kind 0 is the event ``seq`` itself, 1 the
invalidate that follows it on a stream it invalidates, 2 "everything up to ``seq``" (a
high-water mark). Resume tokens (``{_data: hex}``) encode the position and the cluster time.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.bson.binary import Binary
from asyncmongo.bson.types import Timestamp
from asyncmongo.testing.store.errors import StoreError

Document = dict[str, Any]
Position = tuple[int, int]

EVENT, INVALIDATE, HIGH_WATER_MARK = 0, 1, 2
#: How many events the log keeps (older resume tokens fail with 286 ChangeStreamHistoryLost).
MAX_EVENTS = 100_000
#: Event types only shown with ``showExpandedEvents`` (mongod 6.0+).
EXPANDED = frozenset({"create", "createIndexes", "dropIndexes", "modify", "shardCollection"})

_replacing: contextvars.ContextVar[bool] = contextvars.ContextVar("replacing", default=False)


@contextlib.contextmanager
def replacing(replacement: bool) -> Iterator[None]:
    """Inside this block a changed document is a ``replace`` event (replacement-style
    update) rather than an ``update``: set by the update commands around their writes."""
    token = _replacing.set(replacement)
    try:
        yield
    finally:
        _replacing.reset(token)


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One entry of the log (an oplog entry, as change streams see it)."""

    seq: int
    cluster_time: Timestamp
    wall_time: datetime.datetime
    operation_type: str
    db: str
    coll: str | None
    uuid: Binary | None = None
    document_key: Document | None = None
    #: The post-image (insert, replace, update); None for a delete.
    full_document: Document | None = None
    #: The pre-image (update, replace, delete).
    before: Document | None = None
    #: Whether the collection had changeStreamPreAndPostImages enabled at the time.
    images: bool = False
    #: Event-specific fields (``to``, ``operationDescription``, ``nsType``).
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def expanded(self) -> bool:
        return self.operation_type in EXPANDED


def encode_token(position: Position, cluster_time: Timestamp) -> Document:
    """A resume token: ``{_data: hex}`` (time, increment, seq, kind), ordered as the log."""
    seq, kind = position
    return {"_data": f"82{cluster_time.time:08X}{cluster_time.inc:08X}{seq:016X}{kind:02X}"}


def decode_token(token: Any) -> Position:
    """The log position of a resume token (a malformed one is 260 InvalidResumeToken)."""
    data = token.get("_data") if isinstance(token, Mapping) else None
    if not isinstance(data, str) or len(data) != 36 or not data.startswith("82"):
        raise StoreError(260, f"Invalid resume token: {token!r}")
    try:
        seq, kind = int(data[18:34], 16), int(data[34:36], 16)
    except ValueError:
        raise StoreError(260, f"Invalid resume token: {token!r}") from None
    if kind not in (EVENT, INVALIDATE, HIGH_WATER_MARK):
        raise StoreError(260, f"Invalid resume token: {token!r}")
    return seq, kind


class ChangeLog:
    """The store's change events, oldest first, with a cluster time each.

    ``clock`` gives the wall time; cluster times are (seconds, increment), increasing.
    """

    def __init__(self, clock: Callable[[], datetime.datetime]) -> None:
        self._clock = clock
        self.events: list[ChangeEvent] = []
        self.head = 0
        self._last_time = Timestamp(0, 0)
        #: The deployment's optime source (a replica set's ``record_write``), if any: each
        #: event is then a write at the set's next optime, as each is an oplog entry.
        self.tick: Callable[[datetime.datetime], Timestamp] | None = None

    def __repr__(self) -> str:
        return f"ChangeLog({len(self.events)} events, head {self.head})"

    # -- reading ---------------------------------------------------------------------------

    @property
    def oldest(self) -> int:
        """The sequence number of the oldest kept event (head + 1 when empty)."""
        return self.events[0].seq if self.events else self.head + 1

    def after(self, seq: int) -> list[ChangeEvent]:
        """The events newer than ``seq``, oldest first."""
        start = max(0, seq + 1 - self.oldest)
        return self.events[start:]

    def now(self) -> Timestamp:
        """The newest cluster time (a high-water mark's)."""
        if self._last_time.time:
            return self._last_time
        return Timestamp(int(self._clock().timestamp()), 0)

    def seq_before(self, cluster_time: Timestamp) -> int:
        """The newest event older than ``cluster_time`` (startAtOperationTime)."""
        seq = self.oldest - 1
        for event in self.events:
            if _ts_key(event.cluster_time) >= _ts_key(cluster_time):
                break
            seq = event.seq
        return seq

    # -- writing ---------------------------------------------------------------------------

    def _next_time(self, now: datetime.datetime) -> Timestamp:
        if self.tick is not None:
            ticked = self.tick(now)
            if _ts_key(ticked) > _ts_key(self._last_time):
                self._last_time = ticked
                return ticked
        seconds = max(int(now.timestamp()), self._last_time.time)
        inc = self._last_time.inc + 1 if seconds == self._last_time.time else 1
        self._last_time = Timestamp(seconds, inc)
        return self._last_time

    def record(self, operation_type: str, db: str, coll: str | None, **fields: Any
               ) -> ChangeEvent:
        """Append one event (its seq and cluster time are the next ones)."""
        now = self._clock()
        self.head += 1
        event = ChangeEvent(self.head, self._next_time(now), now, operation_type, db, coll,
                            **fields)
        self.events.append(event)
        if len(self.events) > MAX_EVENTS:
            del self.events[:len(self.events) - MAX_EVENTS]
        return event

    def document_changed(self, collection: Any, old: Document | None,
                         new: Document | None) -> None:
        """A collection stored, replaced or removed a document (collection.py's journal).
        Stored documents are never changed in place, so the event keeps them as they are."""
        if old is None:
            if new is None:
                return
            kind, source = "insert", new
        elif new is None:
            kind, source = "delete", old
        else:
            kind, source = ("replace" if _replacing.get() else "update"), new
        key = {"_id": source["_id"]} if "_id" in source else {}
        images = collection.options.get("changeStreamPreAndPostImages")
        now = self._clock()
        self.head += 1
        self.events.append(ChangeEvent(
            self.head, self._next_time(now), now, kind, collection.db_name, collection.name,
            collection.uuid, key, new, old,
            isinstance(images, Mapping) and bool(images.get("enabled")), _NO_EXTRA))
        if len(self.events) > MAX_EVENTS:
            del self.events[:len(self.events) - MAX_EVENTS]

    def collection_created(self, collection: Any) -> None:
        options = dict(collection.options)
        ns_type = "view" if "viewOn" in options else (
            "timeseries" if "timeseries" in options else "collection")
        description: Document = {}
        if ns_type == "collection":
            description["idIndex"] = {"v": 2, "key": {"_id": 1}, "name": "_id_"}
        description.update({k: v for k, v in options.items() if k not in ("idIndex",)})
        self.record("create", collection.db_name, collection.name, uuid=collection.uuid,
                    extra={"operationDescription": description, "nsType": ns_type})

    def collection_dropped(self, collection: Any) -> None:
        self.record("drop", collection.db_name, collection.name, uuid=collection.uuid)

    def database_dropped(self, db_name: str) -> None:
        self.record("dropDatabase", db_name, None)


_NO_EXTRA: Mapping[str, Any] = {}


def _ts_key(value: Timestamp) -> tuple[int, int]:
    return value.time, value.inc
