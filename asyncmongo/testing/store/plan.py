"""The index a find would use, for what depends on it: ``returnKey`` and ``showRecordId``.

The store scans documents and never needs an index to answer, but ``returnKey: true``
returns only the index key of each result: mongod's plan decides which. This picks the plan
as mongod's planner does in the plain cases: a ``hint``; else an index whose first field the
filter constrains; else one that provides the sort; else a collection scan, whose keys are
empty documents. ``showRecordId`` adds the document's record id as ``$recordId`` (an int64);
with ``returnKey`` it is not shown (mongod's ReturnKey stage keeps only the key fields).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store.collection import Collection, Document, Index
from asyncmongo.testing.store.update import strict_key

Projector = Callable[[Document], Document]


def plan_index(collection: Collection | None, query: Mapping[str, Any] | None,
               sort: Mapping[str, Any] | None, hint: Any) -> Index | None:
    """The index mongod's plan would scan (None: a collection scan)."""
    if collection is None:
        return None
    indexes = list(collection.indexes.values())
    if isinstance(hint, str):
        return collection.indexes.get(hint)
    if isinstance(hint, Mapping) and hint:
        if "$natural" in hint:
            return None
        return next((i for i in indexes if strict_key(i.key) == strict_key(dict(hint))), None)
    fields = {name for name in (query or {}) if not name.startswith("$")}
    for index in indexes:
        if next(iter(index.key)) in fields and index.partial is None and not index.sparse:
            return index
    if sort:
        wanted = [(name, _direction(value)) for name, value in sort.items()]
        for index in indexes:
            own = [(name, _direction(value)) for name, value in index.key.items()]
            flipped = [(name, -direction) for name, direction in own]
            if wanted in (own[:len(wanted)], flipped[:len(wanted)]) and index.partial is None:
                return index
    return None


def _direction(value: Any) -> int:
    return -1 if isinstance(value, int | float) and value < 0 else 1


def shape(documents: list[Document], collection: Collection | None, index: Index | None,
          projector: Projector | None, *, return_key: bool,
          show_record_id: bool) -> list[Document]:
    """The results of a find: projected, or as ``returnKey`` / ``showRecordId`` make them."""
    if return_key:
        return [_key_of(index, document) for document in documents]
    shaped = [projector(d) for d in documents] if projector is not None else documents
    if show_record_id and collection is not None:
        return [{**shown, "$recordId": Int64(collection.record_id(document))}
                for shown, document in zip(shaped, documents, strict=True)]
    return shaped


def _key_of(index: Index | None, document: Document) -> Document:
    if index is None:
        return {}
    keys = index.keys_for(document)
    return index.key_value(keys[0]) if keys else {}
