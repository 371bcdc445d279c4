"""asyncmongo's write results as PyMongo's ``pymongo.results`` classes.

Code written for PyMongo checks ``isinstance(r, UpdateResult)`` against PyMongo's class;
the compatible client returns PyMongo's, built from the same fields (the raw results
already have PyMongo's shape).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pymongo.results as pymongo_results

from asyncmongo import results

__all__ = ["RESULT_CONVERTERS"]


def _insert_one(r: results.InsertOneResult) -> Any:
    return pymongo_results.InsertOneResult(r.inserted_id, r.acknowledged)


def _insert_many(r: results.InsertManyResult) -> Any:
    return pymongo_results.InsertManyResult(r.inserted_ids, r.acknowledged)


def _update(r: results.UpdateResult) -> Any:
    return pymongo_results.UpdateResult(r.raw_result, r.acknowledged)


def _delete(r: results.DeleteResult) -> Any:
    # PyMongo's unacknowledged delete has the raw result {"ok": 1} (its update has None).
    raw = r.raw_result if r.acknowledged else {"ok": 1}
    return pymongo_results.DeleteResult(raw, r.acknowledged)  # type: ignore[arg-type]


def _bulk(r: results.BulkWriteResult) -> Any:
    # PyMongo's unacknowledged bulk result is empty: nothing is known of what was written.
    document = dict(r.bulk_api_result) if r.acknowledged else {}
    return pymongo_results.BulkWriteResult(document, r.acknowledged)


#: The fields PyMongo's client bulk write result always has, besides the counts.
_CLIENT_BULK_FIELDS = ("insertResults", "updateResults", "deleteResults")


def _client_bulk(r: results.ClientBulkWriteResult) -> Any:
    document: dict[str, Any] = {
        "anySuccessful": True,  # a result (not an error) means some write succeeded
        "error": None,
        "writeErrors": [],
        "writeConcernErrors": [],
        **{name: {} for name in _CLIENT_BULK_FIELDS},
    }
    document.update(r.bulk_api_result)
    for name in _CLIENT_BULK_FIELDS:
        document[name] = {
            index: RESULT_CONVERTERS[type(value)](value) if type(value) in RESULT_CONVERTERS
            else value
            for index, value in document[name].items()
        }
    return pymongo_results.ClientBulkWriteResult(
        document, r.acknowledged, r.has_verbose_results
    )


#: asyncmongo's result class -> the function building PyMongo's.
RESULT_CONVERTERS: dict[type, Callable[[Any], Any]] = {
    results.InsertOneResult: _insert_one,
    results.InsertManyResult: _insert_many,
    results.UpdateResult: _update,
    results.DeleteResult: _delete,
    results.BulkWriteResult: _bulk,
    results.ClientBulkWriteResult: _client_bulk,
}
