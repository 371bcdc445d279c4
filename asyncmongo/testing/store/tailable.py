"""Tailable cursors on capped collections, as mongod 8.0 runs them.

``find`` with ``tailable: true`` (and ``awaitData``) is checked as mongod checks it, and the
cursor it opens stays open when its results run out (id != 0, empty batches) unless the
collection was empty. Each getMore first takes the documents inserted since the cursor last
looked (by record id, oldest first, through the cursor's filter and projection). If the
capped collection has since removed the document the cursor had reached, the cursor is dead
(136 CappedPositionLost), as on mongod. The waiting of ``awaitData`` (up to the getMore's
``maxTimeMS``, one second by default) is the server front end's: the store only answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.testing.store.collection import Collection
from asyncmongo.testing.store.cursors import Cursor, Tail
from asyncmongo.testing.store.database import Namespaces
from asyncmongo.testing.store.errors import StoreError, bad_value

#: How long an awaitData getMore without maxTimeMS waits (mongod's default), in ms.
DEFAULT_AWAIT_MS = 1000

Projector = Callable[[dict[str, Any]], dict[str, Any]]


def is_tailable(command: Mapping[str, Any], collection: Collection | None) -> bool:
    """Whether a find opens a tailable cursor; its invalid combinations fail as on mongod."""
    tailable = command.get("tailable") is True
    await_data = command.get("awaitData") is True
    if await_data and not tailable:
        raise StoreError(9, "Cannot set 'awaitData' without also setting 'tailable'")
    if not tailable:
        return False
    sort = command.get("sort")
    if isinstance(sort, Mapping) and sort and dict(sort) != {"$natural": 1}:
        raise bad_value("cannot use tailable option with a sort other than {$natural: 1}")
    if command.get("singleBatch") is True:
        raise bad_value("cannot use tailable option with the 'singleBatch' option")
    if collection is not None and collection.is_view:
        raise StoreError(166, f"Namespace {collection.namespace} is a view; tailable "
                              "cursors are not supported on views")
    if collection is not None and not collection.capped:
        raise bad_value(f"error processing query: ns={collection.namespace} planner returned "
                        "error :: caused by :: tailable cursor requested on non capped "
                        "collection")
    return True


def tail_of(command: Mapping[str, Any], collection: Collection | None,
            predicate: Callable[[dict[str, Any]], bool],
            projector: Projector | None) -> Tail | None:
    """The tail of a tailable find's cursor; None (the cursor closes) on an empty or
    missing collection, as mongod keeps no tailable cursor there."""
    if collection is None or not len(collection):
        return None
    newest = max(collection.record_ids.values(), default=0)
    return Tail(collection.db_name, collection.name, predicate, projector, newest,
                command.get("awaitData") is True)


def refill(cursor: Cursor, namespaces: Namespaces) -> None:
    """Add to a tailable cursor the documents inserted since it last looked."""
    tail = cursor.tail
    if tail is None:
        return
    collection = namespaces.get(tail.db_name, tail.collection)
    if collection is None:
        return
    oldest = min(collection.record_ids.values(), default=collection.next_record_id)
    if oldest > tail.last_record_id:
        # The document the cursor had reached is gone (capped truncation or a delete).
        raise StoreError(136, "CollectionScan died due to position in capped collection "
                              "being deleted. Last seen record id: "
                              f"RecordId({tail.last_record_id})")
    new = collection.after(tail.last_record_id)
    if not new:
        return
    tail.last_record_id = collection.record_id(new[-1]) or tail.last_record_id
    del cursor.documents[:cursor.position]
    cursor.position = 0
    for document in new:
        if tail.predicate(document):
            cursor.documents.append(tail.projector(document) if tail.projector else document)


def refuse_capped_write_in_transaction(collection: Collection | None) -> None:
    """mongod allows no writes to a capped collection inside a transaction (263)."""
    if collection is not None and collection.capped:
        raise StoreError(263, f"Collection '{collection.namespace}' is a capped collection. "
                              "Writes in transactions are not allowed on capped collections.")


def await_data(cursor: Cursor | None) -> bool:
    """True for an open awaitData cursor: its getMore may wait for new documents."""
    return cursor is not None and cursor.tail is not None and cursor.tail.await_data
