"""Converting Returned Model Objects to Documents (unified test format).

Result objects (InsertOneResult, UpdateResult, BulkWriteResult, ...) become documents with
the CRUD spec's field names, so expectResult can match them: ``insertedId``,
``insertedIds`` (index -> id), ``matchedCount``, ``modifiedCount``, ``upsertedId``,
``upsertedCount``, ``upsertedIds``, ``deletedCount``, ``insertedCount``. An unacknowledged
result becomes ``{"acknowledged": false}`` plus whatever it can say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["bulk_write_result_document", "result_document"]

_COUNTS = (
    ("inserted_count", "insertedCount"),
    ("matched_count", "matchedCount"),
    ("modified_count", "modifiedCount"),
    ("deleted_count", "deletedCount"),
    ("upserted_count", "upsertedCount"),
)


def result_document(result: Any) -> Any:
    """A driver result as the document the spec compares; other values unchanged."""
    kind = type(result).__name__
    converter = _CONVERTERS.get(kind)
    if converter is None:
        return result
    if getattr(result, "acknowledged", True) is False:
        return {"acknowledged": False}
    return converter(result)


def _insert_one(result: Any) -> dict[str, Any]:
    return {"insertedId": result.inserted_id}


def _insert_many(result: Any) -> dict[str, Any]:
    return {"insertedIds": {str(i): v for i, v in enumerate(result.inserted_ids)}}


def _update(result: Any) -> dict[str, Any]:
    document = {
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": 0 if result.upserted_id is None else 1,
    }
    if result.upserted_id is not None:
        document["upsertedId"] = result.upserted_id
    return document


def _client_update(result: Any) -> dict[str, Any]:
    """A client bulk write's per-op UpdateResult: the CRUD spec's ClientBulkWriteResult
    model has matchedCount, modifiedCount and upsertedId, but no upsertedCount."""
    document = _update(result)
    del document["upsertedCount"]
    return document


def _delete(result: Any) -> dict[str, Any]:
    return {"deletedCount": result.deleted_count}


def _bulk(result: Any) -> dict[str, Any]:
    document: dict[str, Any] = {new: getattr(result, old) for old, new in _COUNTS}
    document["upsertedIds"] = {str(k): v for k, v in result.upserted_ids.items()}
    inserted = getattr(result, "inserted_ids", None)
    if inserted is not None:  # optional in the CRUD spec; PyMongo does not report it
        document["insertedIds"] = {str(k): v for k, v in dict(inserted).items()}
    return document


def _client_bulk(result: Any) -> dict[str, Any]:
    document: dict[str, Any] = {new: getattr(result, old) for old, new in _COUNTS}
    if result.has_verbose_results:
        document["insertResults"] = {
            str(k): _insert_one(v) for k, v in result.insert_results.items()}
        document["updateResults"] = {
            str(k): _client_update(v) for k, v in result.update_results.items()}
        document["deleteResults"] = {
            str(k): _delete(v) for k, v in result.delete_results.items()}
    return document


def bulk_write_result_document(details: Mapping[str, Any]) -> dict[str, Any]:
    """The partial BulkWriteResult a BulkWriteError's details describe."""
    upserted = details.get("upserted", ())
    return {
        "insertedCount": details.get("nInserted", 0),
        "matchedCount": details.get("nMatched", 0),
        "modifiedCount": details.get("nModified", 0),
        "deletedCount": details.get("nRemoved", 0),
        "upsertedCount": details.get("nUpserted", len(upserted)),
        "upsertedIds": {str(u["index"]): u["_id"] for u in upserted},
    }


_CONVERTERS = {
    "InsertOneResult": _insert_one,
    "InsertManyResult": _insert_many,
    "UpdateResult": _update,
    "DeleteResult": _delete,
    "BulkWriteResult": _bulk,
    "ClientBulkWriteResult": _client_bulk,
}
