"""A collection: documents in insertion order, keyed by ``_id``, plus its indexes.

Documents are never changed in place: a write stores a new document object, so a clone (a
transaction's snapshot) can share the others. Every write goes through ``guard`` first, which is
how the store detects write conflicts between transactions and plain writes.

Each document has a record id (mongod's RecordId: an increasing int64 given at insert, kept by
updates): ``find``'s ``showRecordId`` shows it and a tailable cursor resumes after it. A capped
collection (``capped: true`` with ``size`` bytes and optionally ``max`` documents) removes its
oldest documents when an insert takes it past either limit, as mongod does.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, Protocol, TypeVar

from asyncmongo.bson import encode
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.types import Regex
from asyncmongo.testing.store.collation import active, using
from asyncmongo.testing.store.compare import hash_key, integral
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.matcher import Predicate, compile_filter
from asyncmongo.testing.store.paths import MISSING, collect, split_path
from asyncmongo.testing.store.render import render
from asyncmongo.testing.store.text_index import text_spec

Document = dict[str, Any]
P = ParamSpec("P")
R = TypeVar("R")
Guard = Callable[["Collection", Any], None]


class Journal(Protocol):
    """Where a collection reports its document changes (the store's change log)."""

    def document_changed(self, collection: Collection, old: Document | None,
                         new: Document | None) -> None: ...

ID_INDEX_NAME = "_id_"
#: The head of a time series measurement's storage key (never equal to an ``_id`` key).
_MEASUREMENT = object()
_MAX_KEYS_PER_DOCUMENT = 10_000


@dataclass(slots=True)
class Index:
    """One index: its specification as listed, and (for unique ones) its key → _id entries.

    ``prepare_unique`` (collMod's prepareUnique) refuses new duplicate keys while tolerating
    those already there, as a unique index does once converted.
    """

    name: str
    key: dict[str, Any]
    unique: bool = False
    sparse: bool = False
    partial: Predicate | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    entries: dict[Any, Any] = field(default_factory=dict)
    prepare_unique: bool = False

    def copy(self) -> Index:
        return Index(self.name, self.key, self.unique, self.sparse, self.partial, self.spec,
                     dict(self.entries), self.prepare_unique)

    def keys_for(self, document: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The index keys of a document (several for array fields); none if not indexed."""
        if self.partial is not None and not self.partial(document):
            return []
        per_field: list[list[Any]] = []
        present = False
        for path in self.key:
            values = _index_values(document, path)
            present = present or values != [None] or _has_path(document, path)
            per_field.append(values)
        if self.sparse and not present:
            return []
        keys = itertools.islice(itertools.product(*per_field), _MAX_KEYS_PER_DOCUMENT)
        return [tuple(combo) for combo in keys]

    def key_value(self, combo: tuple[Any, ...]) -> dict[str, Any]:
        return dict(zip(self.key, combo, strict=True))


def _has_path(document: Mapping[str, Any], path: str) -> bool:
    return any(v is not MISSING for v in collect(document, split_path(path)))


def _index_values(document: Mapping[str, Any], path: str) -> list[Any]:
    values: list[Any] = []
    for value in collect(document, split_path(path)):
        if value is MISSING:
            values.append(None)
        elif isinstance(value, list):
            values.extend(value or [None])
        else:
            values.append(value)
    unique: dict[Any, Any] = {}
    for value in values:
        unique.setdefault(hash_key(value), value)
    return list(unique.values())


def id_key(value: Any) -> Any:
    """The key a document's ``_id`` is stored under (1, 1.0 and Int64(1) are one key)."""
    return hash_key(value)


def new_uuid(rng_bytes: bytes) -> Binary:
    """A UUID (subtype 4) from 16 random bytes, version 4 bits set."""
    data = bytearray(rng_bytes)
    data[6] = (data[6] & 0x0F) | 0x40
    data[8] = (data[8] & 0x3F) | 0x80
    return Binary(bytes(data), 4)


def _binary_keys(method: Callable[P, R]) -> Callable[P, R]:
    """Run ``method`` with simple (binary) string comparison: stored keys never depend on the
    collation of the command that happens to write."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with using(None):
            return method(*args, **kwargs)

    return wrapper


class Collection:
    """The documents and indexes of one namespace."""

    def __init__(self, db_name: str, name: str, options: Mapping[str, Any] | None = None,
                 uuid: Binary | None = None) -> None:
        self.db_name = db_name
        self.name = name
        self.options: dict[str, Any] = dict(options or {})
        self.uuid = uuid
        self.documents: dict[Any, Document] = {}
        self.id_index = Index(ID_INDEX_NAME, {"_id": 1}, spec={"v": 2, "key": {"_id": 1},
                                                               "name": ID_INDEX_NAME})
        self.indexes: dict[str, Index] = {ID_INDEX_NAME: self.id_index}
        self.guard: Guard | None = None
        #: The change log this collection's writes go to (None for a transaction's copy:
        #: its writes reach the log at commit, through the real collection).
        self.journal: Journal | None = None
        #: document key -> its record id (insertion order, as ``documents``).
        self.record_ids: dict[Any, int] = {}
        self.next_record_id = 1
        #: A capped collection's BSON sizes: key -> (the document version, its size).
        self._sizes: dict[Any, tuple[Document, int]] = {}

    def __repr__(self) -> str:
        return (f"Collection({self.namespace!r}: {len(self.documents)} documents, "
                f"{len(self.indexes)} indexes)")

    @property
    def namespace(self) -> str:
        return f"{self.db_name}.{self.name}"

    def clone(self) -> Collection:
        """A copy sharing the (immutable) documents: a transaction's snapshot."""
        copy = Collection(self.db_name, self.name, self.options, self.uuid)
        copy.documents = dict(self.documents)
        copy.indexes = {name: index.copy() for name, index in self.indexes.items()}
        copy.id_index = copy.indexes.get(self.id_index.name, self.id_index)
        copy.record_ids = dict(self.record_ids)
        copy.next_record_id = self.next_record_id
        return copy

    @property
    def capped(self) -> bool:
        return self.options.get("capped") is True

    @property
    def is_view(self) -> bool:
        """A view (``create`` with ``viewOn``): no documents of its own."""
        return "viewOn" in self.options

    @property
    def is_timeseries(self) -> bool:
        return isinstance(self.options.get("timeseries"), Mapping)

    def record_id(self, document: Mapping[str, Any]) -> int:
        """The record id of a stored document (0 if it is not stored here)."""
        return self.record_ids.get(id_key(document.get("_id")), 0)

    def after(self, record_id: int) -> list[Document]:
        """The documents inserted after ``record_id``, oldest first (a tailable cursor's
        next documents)."""
        return [self.documents[key] for key, rid in self.record_ids.items()
                if rid > record_id and key in self.documents]

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self.documents.values()))

    def __len__(self) -> int:
        return len(self.documents)

    def candidates(self, query: Mapping[str, Any] | None) -> list[Document]:
        """The documents a query can match: one lookup for an ``_id`` equality, else all.

        The caller still applies the full filter; this only narrows the scan.
        """
        if (isinstance(query, Mapping) and "_id" in query and active() is None
                and not self.is_timeseries):
            wanted = query["_id"]
            if isinstance(wanted, Mapping) and list(wanted) == ["$eq"]:
                wanted = wanted["$eq"]
            if not isinstance(wanted, Mapping | list | Regex | re.Pattern):
                found = self.documents.get(id_key(wanted))
                return [found] if found is not None else []
        return list(self.documents.values())

    def __bool__(self) -> bool:
        """A collection exists even when empty (never falsy)."""
        return True

    # --- writes ---------------------------------------------------------------------------

    def key_of(self, document: Mapping[str, Any]) -> Any:
        """The key a stored document is kept under (its ``_id``'s; a time series
        measurement's own, since measurements may share an ``_id``)."""
        if not self.is_timeseries:
            return id_key(document["_id"])
        return next(key for key, stored in self.documents.items() if stored is document)

    @_binary_keys
    def insert(self, document: Document) -> None:
        """Add a document (it must have ``_id``); duplicate keys fail with 11000, except in a
        time series collection, which has no unique ``_id`` index."""
        key = ((_MEASUREMENT, self.next_record_id) if self.is_timeseries
               else id_key(document["_id"]))
        if key in self.documents:
            raise self.duplicate_error(self.id_index, (document["_id"],))
        self._check_unique(document, key)
        if self.guard is not None:
            self.guard(self, key)
        self.documents[key] = document
        self._new_record(key)
        self._add_entries(document, key)
        if self.journal is not None:
            self.journal.document_changed(self, None, document)
        if self.capped:
            self._trim_capped(key)

    def _new_record(self, key: Any) -> None:
        self.record_ids[key] = self.next_record_id
        self.next_record_id += 1

    def _trim_capped(self, newest: Any) -> None:
        """Remove the oldest documents while the collection is past ``max`` documents or
        ``size`` bytes (of BSON), never the one just inserted."""
        limit = _positive(self.options.get("max"))
        size = _positive(self.options.get("size"))
        if size is not None:
            # mongod: at least 4096 bytes, else rounded up to a multiple of 256
            size = max(4096, -(-size // 256) * 256)
        total = sum(self._bson_size(k, d) for k, d in self.documents.items()) if size else 0
        for key in list(self.documents):
            over_count = limit is not None and len(self.documents) > limit
            over_size = size is not None and total > size
            if key == newest or not (over_count or over_size):
                break
            if size:
                total -= self._bson_size(key, self.documents[key])
            self.delete(key)
            self._sizes.pop(key, None)

    def _bson_size(self, key: Any, document: Document) -> int:
        """The BSON size of a stored document, remembered while that version is stored."""
        known = self._sizes.get(key)
        if known is None or known[0] is not document:
            known = self._sizes[key] = (document, len(encode(document)))
        return known[1]

    @_binary_keys
    def replace(self, key: Any, document: Document) -> None:
        """Store a new version of the document with the given key."""
        old = self.documents[key]
        self._check_unique(document, key)
        if self.guard is not None:
            self.guard(self, key)
        self._remove_entries(old)
        self.documents[key] = document
        self._add_entries(document, key)
        if self.journal is not None:
            self.journal.document_changed(self, old, document)

    @_binary_keys
    def delete(self, key: Any) -> None:
        if self.guard is not None:
            self.guard(self, key)
        old = self.documents.pop(key)
        self._remove_entries(old)
        self.record_ids.pop(key, None)
        if self.journal is not None:
            self.journal.document_changed(self, old, None)

    @_binary_keys
    def put_raw(self, key: Any, document: Document | None) -> None:
        """Set or remove a document without checks (applying a committed transaction)."""
        old = self.documents.pop(key, None) if document is None else self.documents.get(key)
        if old is not None:
            self._remove_entries(old)
        if document is None:
            self.record_ids.pop(key, None)
        else:
            self.documents[key] = document
            if key not in self.record_ids:
                self._new_record(key)
            self._add_entries(document, key)
        if self.journal is not None and old is not document:
            self.journal.document_changed(self, old, document)

    # --- unique indexes -------------------------------------------------------------------

    def _unique_indexes(self) -> list[Index]:
        return [i for i in self.indexes.values()
                if (i.unique or i.prepare_unique) and i is not self.id_index]

    def _check_unique(self, document: Document, key: Any) -> None:
        for index in self._unique_indexes():
            for combo in index.keys_for(document):
                owner = index.entries.get(_combo_key(combo))
                if owner is not None and owner != key:
                    raise self.duplicate_error(index, combo)

    def _add_entries(self, document: Document, key: Any) -> None:
        for index in self._unique_indexes():
            for combo in index.keys_for(document):
                index.entries.setdefault(_combo_key(combo), key)

    def _remove_entries(self, document: Document) -> None:
        if not self._unique_indexes():
            return
        key = id_key(document["_id"])
        for index in self._unique_indexes():
            for combo in index.keys_for(document):
                if index.entries.get(_combo_key(combo)) == key:
                    del index.entries[_combo_key(combo)]

    def duplicate_error(self, index: Index, combo: tuple[Any, ...]) -> StoreError:
        """The server's E11000 error for a key already taken in ``index``."""
        key_value = index.key_value(combo)
        shown = render(key_value, spaced=True)
        return StoreError(
            11000,
            f"E11000 duplicate key error collection: {self.namespace} index: {index.name} "
            f"dup key: {shown}",
            extra={"keyPattern": dict(index.key), "keyValue": key_value},
        )

    @_binary_keys
    def track_keys(self, index: Index) -> dict[Any, list[Any]]:
        """Start enforcing ``index``'s keys (it became unique or prepareUnique): its entries
        from the documents there; returns the keys held by more than one document, with the
        ``_id`` values holding them."""
        holders: dict[Any, list[Any]] = {}
        index.entries = {}
        for key, document in self.documents.items():
            for combo in index.keys_for(document):
                index.entries.setdefault(_combo_key(combo), key)
                holders.setdefault(_combo_key(combo), []).append(document["_id"])
        return {combo: ids for combo, ids in holders.items() if len(ids) > 1}

    @_binary_keys
    def add_index(self, index: Index) -> None:
        """Build ``index`` over the existing documents (duplicates fail with 11000)."""
        if index.prepare_unique and not index.unique:
            self.track_keys(index)
        if index.unique and index is not self.id_index:
            for key, document in self.documents.items():
                for combo in index.keys_for(document):
                    owner = index.entries.setdefault(_combo_key(combo), key)
                    if owner != key:
                        raise self.duplicate_error(index, combo)
        self.indexes[index.name] = index


def _positive(value: Any) -> int | None:
    """A positive integral limit (capped ``size``/``max``), None when absent or not positive."""
    whole = integral(value) if value is not None else None
    return whole if whole is not None and whole > 0 else None


def _combo_key(combo: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(hash_key(v) for v in combo)


def index_name(key: Mapping[str, Any]) -> str:
    """The default index name: ``a_1_b_-1``."""
    parts = []
    for path, direction in key.items():
        whole = integral(direction)
        shown = whole if whole is not None else direction
        parts.append(f"{path}_{shown}")
    return "_".join(parts)


def make_index(spec: Mapping[str, Any]) -> Index:
    """An :class:`Index` from a createIndexes specification (validated)."""
    key = spec.get("key")
    if not isinstance(key, Mapping) or not key:
        raise StoreError(67, "Index key pattern must be a non-empty object")
    spec = text_spec(spec)
    key = spec["key"]
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise StoreError(9, "The 'name' field is a required property of an index specification")
    partial_spec = spec.get("partialFilterExpression")
    partial = compile_filter(partial_spec) if partial_spec is not None else None
    listed = {"v": 2, "key": dict(key), "name": name}
    listed.update({k: v for k, v in spec.items() if k not in ("key", "name", "v")})
    return Index(name, dict(key), bool(spec.get("unique", False)),
                 bool(spec.get("sparse", False)), partial, listed,
                 prepare_unique=spec.get("prepareUnique") is True)
