"""Server-side cursors: ids, batches, getMore and killCursors.

A cursor holds the rest of a result (already computed: the store answers from memory) and
hands it out in batches. Ids are positive Int64 values; an unknown id gives code 43.

A tailable cursor (find with ``tailable`` on a capped collection) carries a :class:`Tail`:
it stays open when its documents run out, and each getMore first adds the documents inserted
since (store/tailable.py); an ``awaitData`` one makes the server front end wait for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.values import approximate_size, deep_copy

DEFAULT_FIRST_BATCH = 101
MAX_BATCH_BYTES = 16 * 1024 * 1024


@dataclass(slots=True)
class Tail:
    """Where a tailable cursor reads on: its collection, filter and projection, and the
    record id of the newest document it has looked at."""

    db_name: str
    collection: str
    predicate: Callable[[dict[str, Any]], bool]
    projector: Callable[[dict[str, Any]], dict[str, Any]] | None
    last_record_id: int
    await_data: bool


@dataclass(slots=True)
class Cursor:
    """The remaining documents of one result, and where they come from."""

    cursor_id: int
    namespace: str
    documents: list[dict[str, Any]]
    position: int = 0
    lsid_key: Any = None
    tail: Tail | None = None
    #: A change stream's state (store/change_streams.py); its getMores read the change log.
    stream: Any = None

    @property
    def exhausted(self) -> bool:
        return self.position >= len(self.documents)

    def next_batch(self, batch_size: int | None) -> list[dict[str, Any]]:
        """Up to ``batch_size`` documents (all when None), cut near 16 MiB as the server
        cuts its replies (always at least one document)."""
        end = len(self.documents) if not batch_size else self.position + batch_size
        batch: list[dict[str, Any]] = []
        total = 0
        for document in self.documents[self.position:end]:
            total += approximate_size(document)
            if batch and total > MAX_BATCH_BYTES:
                break
            batch.append(deep_copy(document))
        self.position += len(batch)
        return batch


class CursorManager:
    """Every open cursor of the store, by id."""

    def __init__(self, first_id: int = 7_340_033) -> None:
        self._next_id = first_id
        self.cursors: dict[int, Cursor] = {}

    def __repr__(self) -> str:
        return f"CursorManager({len(self.cursors)} open)"

    def first_batch(self, namespace: str, documents: list[dict[str, Any]],
                    batch_size: int | None, *, single_batch: bool = False,
                    lsid_key: Any = None, tail: Tail | None = None) -> dict[str, Any]:
        """The ``cursor`` sub-document of a find/aggregate/list reply (registers the rest;
        a tailable cursor stays registered when its documents run out)."""
        cursor = Cursor(0, namespace, documents, lsid_key=lsid_key, tail=tail)
        size = batch_size
        if size is None:
            size = None if single_batch else DEFAULT_FIRST_BATCH
        batch = [] if size == 0 else cursor.next_batch(size)
        cursor_id = 0
        if (not cursor.exhausted or tail is not None) and not single_batch:
            cursor_id = self._next_id
            self._next_id += 1
            cursor.cursor_id = cursor_id
            self.cursors[cursor_id] = cursor
        return {"firstBatch": batch, "id": Int64(cursor_id), "ns": namespace}

    def register(self, cursor: Cursor) -> int:
        """Keep a cursor built elsewhere (a change stream's) under a new id."""
        cursor.cursor_id = self._next_id
        self._next_id += 1
        self.cursors[cursor.cursor_id] = cursor
        return cursor.cursor_id

    def find(self, cursor_id: Any, collection: str, db_name: str) -> Cursor:
        """The open cursor a getMore names (43 if unknown, 13 for another namespace)."""
        cursor = self.cursors.get(_cursor_id(cursor_id))
        if cursor is None:
            raise StoreError(43, f"cursor id {int(cursor_id)} not found")
        if cursor.namespace != f"{db_name}.{collection}":
            raise StoreError(13, f"Requested getMore on namespace '{db_name}.{collection}', but "
                                 f"cursor belongs to a different namespace "
                                 f"{cursor.namespace}")
        return cursor

    def get_more(self, cursor_id: Any, collection: str, db_name: str,
                 batch_size: int | None) -> dict[str, Any]:
        cursor = self.find(cursor_id, collection, db_name)
        batch = cursor.next_batch(batch_size)
        if cursor.exhausted and cursor.tail is None:
            del self.cursors[cursor.cursor_id]
            cursor_id = 0
        return {"nextBatch": batch, "id": Int64(cursor_id), "ns": cursor.namespace}

    def kill(self, cursor_ids: list[Any]) -> dict[str, Any]:
        killed, not_found = [], []
        for raw in cursor_ids:
            cursor_id = _cursor_id(raw)
            if self.cursors.pop(cursor_id, None) is None:
                not_found.append(Int64(cursor_id))
            else:
                killed.append(Int64(cursor_id))
        return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [],
                "cursorsUnknown": []}

    def kill_namespace(self, namespace: str) -> None:
        # A change stream outlives its collection: it reports the drop, then invalidates.
        for cursor_id in [i for i, c in self.cursors.items()
                          if c.namespace == namespace and c.stream is None]:
            del self.cursors[cursor_id]


def _cursor_id(value: Any) -> int:
    """A cursor id from a command (an integer; anything else is a TypeMismatch)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise StoreError(14, f"cursor id must be an integer (long), not {type(value).__name__}")
    return int(value)
