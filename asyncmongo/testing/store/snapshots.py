"""Snapshot reads (readConcern ``{level: "snapshot"}`` outside a transaction): the store's
bounded history of past states, keyed by cluster time.

mongod answers a snapshot read at the cluster time it names (``atClusterTime``) or, without
one, at its current cluster time, which it reports back as ``atClusterTime`` so that the
session's later reads see the same data. The store keeps no write history, so a snapshot is
taken when a snapshot read first names a point in time: a copy-on-write
:class:`~asyncmongo.testing.store.database.TransactionView` of the catalog, whose collections
are cloned just before anyone changes them (the same mechanism a transaction uses). A later
read at that time reads the retained view.

A read may name a time nobody read at: if nothing was written after it (it is at or after the
current cluster time), the current data is that snapshot and is retained from now on; a time
that is older than that and not retained answers 239 SnapshotTooOld, as mongod does beyond its
history window. At most ``limit`` snapshots are retained (the oldest goes first), so memory
stays bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.types import Timestamp
from asyncmongo.testing.store.collection import Collection
from asyncmongo.testing.store.database import Catalog, TransactionView
from asyncmongo.testing.store.errors import StoreError

#: Snapshots retained at once (mongod bounds its history by time: minSnapshotHistoryWindow).
DEFAULT_LIMIT = 32


def _read_only(collection: Collection, key: Any) -> None:
    raise StoreError(72, "a snapshot read cannot write")


def _ignore(namespace: tuple[str, str]) -> None:
    return None


class SnapshotHistory:
    """Retained snapshots of the catalog by cluster time (see the module docstring)."""

    def __init__(self, catalog: Catalog, limit: int = DEFAULT_LIMIT) -> None:
        self.catalog = catalog
        self.limit = limit
        self._views: OrderedDict[tuple[int, int], TransactionView] = OrderedDict()
        #: Changes seen so far, and the count when each retained snapshot was taken.
        self._changes = 0
        self._taken_at: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self._views)

    def __repr__(self) -> str:
        return f"SnapshotHistory({len(self._views)} of at most {self.limit} retained)"

    def before_change(self, db_name: str, name: str) -> None:
        """Before a collection changes: every retained snapshot that has not copied it yet
        copies it now, so it keeps the collection as of its own time."""
        self._changes += 1
        for view in self._views.values():
            view.get(db_name, name)

    def view_at(self, requested: Timestamp | None, current: Timestamp
                ) -> tuple[TransactionView, Timestamp]:
        """The snapshot a read at ``requested`` (None: now) sees, and the time it is at.

        ``current`` is the deployment's cluster time: no write is newer than it."""
        at = current if requested is None else requested
        key = (at.time, at.inc)
        view = self._views.get(key)
        if view is not None:
            return view, at
        if (at.time, at.inc) > (current.time, current.inc):
            raise StoreError(72, f"readConcern atClusterTime value {at} must not be greater "
                                 f"than the current clusterTime {current}")
        newest = max(self._views, default=None)
        if requested is not None and (at.time, at.inc) < (current.time, current.inc) and (
                newest is None or key < newest or self._changed_since(newest)):
            raise StoreError(239, f"Read timestamp {at} is older than the oldest available "
                                  "timestamp.")
        view = TransactionView(self.catalog, _read_only, _ignore)
        self._views[key] = view
        self._taken_at[key] = self._changes
        while len(self._views) > self.limit:
            oldest, _ = self._views.popitem(last=False)
            del self._taken_at[oldest]
        return view, at

    def _changed_since(self, key: tuple[int, int]) -> bool:
        """True if a collection changed after the snapshot at ``key`` was taken."""
        return self._taken_at[key] != self._changes


def requested_time(read_concern: Mapping[str, Any] | None) -> Timestamp | None:
    """The ``atClusterTime`` of a read concern (None when absent); a wrong type is 14."""
    if read_concern is None or read_concern.get("atClusterTime") is None:
        return None
    value = read_concern["atClusterTime"]
    if not isinstance(value, Timestamp):
        raise StoreError(14, "BSON field 'atClusterTime' is the wrong type, expected type "
                             "'timestamp'")
    return value
