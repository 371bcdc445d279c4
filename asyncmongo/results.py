"""Result classes of the write operations (PyMongo's ``pymongo.results`` names and semantics).

An unacknowledged write (w:0) returns a result whose ``acknowledged`` is False; reading any
count from it raises InvalidOperation, because the server never said what happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from asyncmongo.errors import InvalidOperation

__all__ = [
    "BulkWriteResult",
    "ClientBulkWriteResult",
    "DeleteResult",
    "InsertManyResult",
    "InsertOneResult",
    "UpdateResult",
]


class _WriteResult:
    __slots__ = ("_acknowledged",)

    def __init__(self, acknowledged: bool) -> None:
        self._acknowledged = acknowledged

    @property
    def acknowledged(self) -> bool:
        """False for w:0: the counts are then unknown and raise InvalidOperation."""
        return self._acknowledged

    def _require_ack(self, name: str) -> None:
        if not self._acknowledged:
            raise InvalidOperation(
                f"{name} is unknown: the write was unacknowledged (w=0); use the result's "
                "acknowledged attribute to check first"
            )


class InsertOneResult(_WriteResult):
    """``insert_one``: the ``_id`` of the inserted document."""

    __slots__ = ("_inserted_id",)

    def __init__(self, inserted_id: Any, acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._inserted_id = inserted_id

    @property
    def inserted_id(self) -> Any:
        """The ``_id`` of the inserted document (the one it had, or the ObjectId added to it). Known
        even for an unacknowledged write, since the driver sets it."""
        return self._inserted_id

    def __repr__(self) -> str:
        return f"InsertOneResult({self._inserted_id!r}, acknowledged={self._acknowledged})"


class InsertManyResult(_WriteResult):
    """``insert_many``: the ``_id`` of every document, in the order given."""

    __slots__ = ("_inserted_ids",)

    def __init__(self, inserted_ids: list[Any], acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._inserted_ids = inserted_ids

    @property
    def inserted_ids(self) -> list[Any]:
        """The ``_id`` of every document given, in the order given (those it had, or the ObjectIds
        added to them). A failed insert_many raises instead of returning a result; the error's
        ``partial_result`` counts what was inserted."""
        return self._inserted_ids

    def __repr__(self) -> str:
        return f"InsertManyResult({self._inserted_ids!r}, acknowledged={self._acknowledged})"


class UpdateResult(_WriteResult):
    """``update_one``/``update_many``/``replace_one``: counts and the upserted ``_id``.

    ``raw_result`` is shaped as PyMongo's (see :meth:`from_reply`); in a client bulkWrite's
    per-operation result (``in_client_bulk``) ``upserted`` is the server's ``{"_id": ...}``.
    """

    __slots__ = ("_in_client_bulk", "_raw_result")

    def __init__(
        self,
        raw_result: Mapping[str, Any] | None,
        acknowledged: bool,
        in_client_bulk: bool = False,
    ) -> None:
        super().__init__(acknowledged)
        self._raw_result = raw_result
        self._in_client_bulk = in_client_bulk

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any] | None, acknowledged: bool) -> UpdateResult:
        """An update command's reply as PyMongo's ``raw_result``: a copy with
        ``updatedExisting`` (n > 0 and nothing upserted) and ``upserted`` replaced by the
        upserted document's ``_id``."""
        if reply is None:
            return cls(None, acknowledged)
        raw = dict(reply)
        raw["updatedExisting"] = bool(raw.get("n")) and "upserted" not in raw
        upserted = raw.get("upserted")
        if isinstance(upserted, list) and upserted:
            raw["upserted"] = upserted[0]["_id"]
        return cls(raw, acknowledged)

    def __repr__(self) -> str:
        return f"UpdateResult({self._raw_result!r}, acknowledged={self._acknowledged})"

    @property
    def raw_result(self) -> Mapping[str, Any] | None:
        """The server's reply, shaped as PyMongo's (None when unacknowledged)."""
        return self._raw_result

    @property
    def matched_count(self) -> int:
        """The number of documents the filter matched (0 when the write upserted, as in PyMongo,
        except in a client bulk write's per-operation result, which reports the server's ``n``).
        Raises InvalidOperation if the write was unacknowledged (w:0)."""
        self._require_ack("matched_count")
        assert self._raw_result is not None
        # A client bulkWrite per-operation result reports the server's n as is, an upsert
        # included (CRUD spec, client-bulkWrite-update-options).
        if not self._in_client_bulk and self.upserted_id is not None:
            return 0
        return int(self._raw_result.get("n", 0))

    @property
    def modified_count(self) -> int:
        """The number of documents actually changed (an update that sets a field to its current
        value matches without modifying). Raises InvalidOperation if the write was unacknowledged
        (w:0)."""
        self._require_ack("modified_count")
        assert self._raw_result is not None
        return int(self._raw_result.get("nModified", 0))

    @property
    def upserted_id(self) -> Any:
        """The ``_id`` of the document inserted by an upsert, or None if none was. Raises
        InvalidOperation if the write was unacknowledged (w:0)."""
        self._require_ack("upserted_id")
        assert self._raw_result is not None
        upserted = self._raw_result.get("upserted")
        if self._in_client_bulk and upserted:
            return upserted["_id"]
        return upserted

    @property
    def did_upsert(self) -> bool:
        """True if the write inserted a document (an upsert whose filter matched nothing). Raises
        InvalidOperation if the write was unacknowledged (w:0)."""
        self._require_ack("did_upsert")
        assert self._raw_result is not None
        return "upserted" in self._raw_result


class DeleteResult(_WriteResult):
    """``delete_one``/``delete_many``: how many documents were deleted."""

    __slots__ = ("_raw_result",)

    def __init__(self, raw_result: Mapping[str, Any] | None, acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._raw_result = raw_result

    def __repr__(self) -> str:
        return f"DeleteResult({self._raw_result!r}, acknowledged={self._acknowledged})"

    @property
    def raw_result(self) -> Mapping[str, Any] | None:
        """The server's reply to the delete command (None when unacknowledged)."""
        return self._raw_result

    @property
    def deleted_count(self) -> int:
        """The number of documents deleted. Raises InvalidOperation if the write was unacknowledged
        (w:0)."""
        self._require_ack("deleted_count")
        assert self._raw_result is not None
        return int(self._raw_result.get("n", 0))


class _BulkTotals(_WriteResult):
    """The counts both bulk results read from their totals document; only the deleted count's
    field differs (``nRemoved`` for a collection's bulk_write, ``nDeleted`` for the client's)."""

    __slots__ = ("_bulk_api_result",)

    _deleted_key: ClassVar[str] = "nRemoved"

    def __init__(self, bulk_api_result: Mapping[str, Any], acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._bulk_api_result = bulk_api_result

    @property
    def bulk_api_result(self) -> Mapping[str, Any]:
        """The totals document (nInserted, nMatched, nModified, nRemoved or nDeleted,
        nUpserted, and the errors the server reported)."""
        return self._bulk_api_result

    def _count(self, key: str, name: str) -> int:
        self._require_ack(name)
        return int(self._bulk_api_result.get(key, 0))

    @property
    def inserted_count(self) -> int:
        """The number of documents inserted by InsertOne models. Raises InvalidOperation if the
        write was unacknowledged (w:0)."""
        return self._count("nInserted", "inserted_count")

    @property
    def matched_count(self) -> int:
        """The number of documents matched by the update and replace models. Raises InvalidOperation
        if the write was unacknowledged (w:0)."""
        return self._count("nMatched", "matched_count")

    @property
    def modified_count(self) -> int:
        """The number of documents the update and replace models actually changed. Raises
        InvalidOperation if the write was unacknowledged (w:0)."""
        return self._count("nModified", "modified_count")

    @property
    def deleted_count(self) -> int:
        """The number of documents deleted by the delete models. Raises InvalidOperation if the
        write was unacknowledged (w:0)."""
        return self._count(self._deleted_key, "deleted_count")

    @property
    def upserted_count(self) -> int:
        """The number of documents inserted by upserts. Raises InvalidOperation if the write was
        unacknowledged (w:0)."""
        return self._count("nUpserted", "upserted_count")


class BulkWriteResult(_BulkTotals):
    """``bulk_write``: totals over every batch; ``upserted_ids`` maps the model's index in the
    user's list to the upserted ``_id``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"BulkWriteResult({self._bulk_api_result!r}, acknowledged={self._acknowledged})"

    @property
    def upserted_ids(self) -> dict[int, Any]:
        """The ``_id`` of each upserted document, keyed by the index of its model in the list given
        to ``bulk_write``. Raises InvalidOperation if the write was unacknowledged (w:0)."""
        self._require_ack("upserted_ids")
        upserted: Sequence[Mapping[str, Any]] = self._bulk_api_result.get("upserted", [])
        return {int(item["index"]): item.get("_id") for item in upserted}


class ClientBulkWriteResult(_BulkTotals):
    """``client.bulk_write``: totals, and per-operation results when ``verbose_results``.

    ``insert_results``, ``update_results`` and ``delete_results`` map the model's index in the
    user's list to an InsertOneResult / UpdateResult / DeleteResult.
    """

    __slots__ = ("_has_verbose_results",)

    _deleted_key: ClassVar[str] = "nDeleted"

    def __init__(
        self, bulk_api_result: Mapping[str, Any], acknowledged: bool, has_verbose_results: bool
    ) -> None:
        super().__init__(bulk_api_result, acknowledged)
        self._has_verbose_results = has_verbose_results

    def __repr__(self) -> str:
        return (
            f"ClientBulkWriteResult({self._bulk_api_result!r}, "
            f"acknowledged={self._acknowledged}, verbose={self._has_verbose_results})"
        )

    @property
    def has_verbose_results(self) -> bool:
        """True if the write was run with ``verbose_results=True``, so that the per-operation
        ``insert_results``, ``update_results`` and ``delete_results`` are available."""
        return self._has_verbose_results

    def _verbose(self, key: str, name: str) -> dict[int, Any]:
        self._require_ack(name)
        if not self._has_verbose_results:
            raise InvalidOperation(f"{name} needs bulk_write(..., verbose_results=True)")
        results: dict[int, Any] = self._bulk_api_result.get(key, {})
        return results

    @property
    def insert_results(self) -> dict[int, InsertOneResult]:
        """An InsertOneResult per InsertOne model, keyed by the model's index in the list given to
        ``client.bulk_write``. Raises InvalidOperation without ``verbose_results=True``. Raises
        InvalidOperation if the write was unacknowledged (w:0)."""
        return self._verbose("insertResults", "insert_results")

    @property
    def update_results(self) -> dict[int, UpdateResult]:
        """An UpdateResult per update or replace model, keyed by the model's index in the list given
        to ``client.bulk_write``. Raises InvalidOperation without ``verbose_results=True``. Raises
        InvalidOperation if the write was unacknowledged (w:0)."""
        return self._verbose("updateResults", "update_results")

    @property
    def delete_results(self) -> dict[int, DeleteResult]:
        """A DeleteResult per delete model, keyed by the model's index in the list given to
        ``client.bulk_write``. Raises InvalidOperation without ``verbose_results=True``. Raises
        InvalidOperation if the write was unacknowledged (w:0)."""
        return self._verbose("deleteResults", "delete_results")
