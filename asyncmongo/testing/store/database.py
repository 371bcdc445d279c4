"""The catalog: databases holding collections, and a transaction's copy-on-write view of it.

Both offer the same small interface (``get``, ``get_or_create``, ``create``, ``drop``,
``names``, ``database_names``), so command code does not know whether it runs in a transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from asyncmongo.bson.binary import Binary
from asyncmongo.testing.store.change_events import ChangeLog
from asyncmongo.testing.store.collection import Collection
from asyncmongo.testing.store.errors import StoreError

Namespace = tuple[str, str]


def check_collection_name(db_name: str, name: Any) -> str:
    """A valid collection name, or InvalidNamespace (73)."""
    if not isinstance(name, str) or not name or "\0" in name or name.startswith("."):
        raise StoreError(73, f"Invalid namespace specified '{db_name}.{name}'")
    if name.startswith("$") or ("$" in name and not name.startswith("oplog.$")):
        raise StoreError(73, f"Invalid namespace specified '{db_name}.{name}'")
    return name


def check_database_name(name: Any) -> str:
    if not isinstance(name, str) or not name or any(c in name for c in '/\\. "$\0'):
        raise StoreError(73, f"Invalid database name: '{name}'")
    return name


class Namespaces(Protocol):
    """What commands need from the catalog (the real one or a transaction's view)."""

    def get(self, db_name: str, name: str) -> Collection | None: ...

    def get_or_create(self, db_name: str, name: str) -> Collection: ...

    def create(self, db_name: str, name: str, options: Mapping[str, Any]) -> Collection: ...

    def drop(self, db_name: str, name: str) -> Collection | None: ...

    def names(self, db_name: str) -> list[str]: ...

    def database_names(self) -> list[str]: ...


class Catalog:
    """Every database and collection of the store (the committed state)."""

    def __init__(self, new_uuid: Callable[[], Binary]) -> None:
        self.databases: dict[str, dict[str, Collection]] = {}
        self.new_uuid = new_uuid
        self.guard: Callable[[Collection, Any], None] | None = None
        #: Called with (db, name) before a collection changes or goes away, so open
        #: transactions can take their snapshot of it first.
        self.before_change: Callable[[str, str], None] | None = None
        #: The change log (change streams) every committed change goes to, if any.
        self.journal: ChangeLog | None = None

    def __repr__(self) -> str:
        count = sum(len(c) for c in self.databases.values())
        return f"Catalog({len(self.databases)} databases, {count} collections)"

    def get(self, db_name: str, name: str) -> Collection | None:
        return self.databases.get(db_name, {}).get(name)

    def get_or_create(self, db_name: str, name: str) -> Collection:
        existing = self.get(db_name, name)
        return existing if existing is not None else self.create(db_name, name, {})

    def create(self, db_name: str, name: str, options: Mapping[str, Any]) -> Collection:
        check_database_name(db_name)
        check_collection_name(db_name, name)
        collection = Collection(db_name, name, options, self.new_uuid())
        collection.guard = self.guard
        self.databases.setdefault(db_name, {})[name] = collection
        self._journal_created(collection)
        return collection

    def adopt(self, collection: Collection) -> None:
        """Install a collection built elsewhere (a committed transaction's new collection)."""
        collection.guard = self.guard
        self.databases.setdefault(collection.db_name, {})[collection.name] = collection
        self._journal_created(collection)
        if self.journal is not None:
            for document in collection:  # the transaction's inserts, committed with it
                self.journal.document_changed(collection, None, document)

    def _journal_created(self, collection: Collection) -> None:
        collection.journal = self.journal
        if self.journal is not None:
            self.journal.collection_created(collection)

    def _changing(self, db_name: str, name: str) -> None:
        if self.before_change is not None:
            self.before_change(db_name, name)

    def drop(self, db_name: str, name: str) -> Collection | None:
        self._changing(db_name, name)
        database = self.databases.get(db_name, {})
        dropped = database.pop(name, None)
        if not database:
            self.databases.pop(db_name, None)
        if dropped is not None and self.journal is not None:
            dropped.journal = None
            self.journal.collection_dropped(dropped)
        return dropped

    def drop_database(self, db_name: str) -> None:
        for name in list(self.databases.get(db_name, {})):
            self._changing(db_name, name)
        dropped = self.databases.pop(db_name, None)
        if self.journal is not None:
            for collection in (dropped or {}).values():
                collection.journal = None
                self.journal.collection_dropped(collection)
            self.journal.database_dropped(db_name)

    def names(self, db_name: str) -> list[str]:
        return list(self.databases.get(db_name, {}))

    def database_names(self) -> list[str]:
        return [name for name, colls in self.databases.items() if colls]


class TransactionView:
    """A transaction's snapshot: collections are cloned on first touch, writes stay here
    until commit. ``guard`` is installed on each clone to track and lock written documents."""

    def __init__(self, catalog: Catalog, guard: Callable[[Collection, Any], None],
                 on_touch: Callable[[Namespace], None]) -> None:
        self.catalog = catalog
        self.guard = guard
        self.on_touch = on_touch
        self.views: dict[Namespace, Collection | None] = {}

    def __repr__(self) -> str:
        return f"TransactionView({len(self.views)} collections touched)"

    def get(self, db_name: str, name: str) -> Collection | None:
        key = (db_name, name)
        if key not in self.views:
            self.on_touch(key)
            real = self.catalog.get(db_name, name)
            clone = real.clone() if real is not None else None
            if clone is not None:
                clone.guard = self.guard
            self.views[key] = clone
        return self.views[key]

    def get_or_create(self, db_name: str, name: str) -> Collection:
        existing = self.get(db_name, name)
        return existing if existing is not None else self.create(db_name, name, {})

    def create(self, db_name: str, name: str, options: Mapping[str, Any]) -> Collection:
        check_database_name(db_name)
        check_collection_name(db_name, name)
        collection = Collection(db_name, name, options, self.catalog.new_uuid())
        collection.guard = self.guard
        self.on_touch((db_name, name))
        self.views[(db_name, name)] = collection
        return collection

    def drop(self, db_name: str, name: str) -> Collection | None:
        raise StoreError(263, "Cannot run 'drop' in a multi-document transaction.")

    def names(self, db_name: str) -> list[str]:
        names = dict.fromkeys(self.catalog.names(db_name))
        for (db, name), view in self.views.items():
            if db == db_name and view is not None:
                names.setdefault(name)
        return list(names)

    def database_names(self) -> list[str]:
        return self.catalog.database_names()
