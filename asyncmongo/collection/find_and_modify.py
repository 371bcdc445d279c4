"""AsyncCollection's find_one_and_delete / _replace / _update (one findAndModify each)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncmongo.bson.typings import _DocumentType
from asyncmongo.collection.arguments import (
    FAM_OPTIONS,
    command_options,
)
from asyncmongo.collection.base import CollectionBase
from asyncmongo.core.operations.find import projection_document
from asyncmongo.core.operations.find_and_modify import ReturnDocument, find_and_modify
from asyncmongo.errors import InvalidArgument

if TYPE_CHECKING:
    pass

__all__ = ["CollectionFindAndModify"]



class CollectionFindAndModify(CollectionBase[_DocumentType]):
    """The findAndModify methods of :class:`~asyncmongo.collection.AsyncCollection`."""

    __slots__ = ()

    async def _find_and_modify(
        self,
        filter: Any,
        projection: Any,
        sort: Any,
        hint: Any,
        let: Mapping[str, Any] | None,
        comment: Any,
        kwargs: Mapping[str, Any],
        session: Any,
        **change: Any,
    ) -> _DocumentType | None:
        """One findAndModify: the options all three methods share, and ``change`` (remove,
        replacement or update, with their own options)."""
        extra, raw_data = command_options(kwargs, FAM_OPTIONS, "find_one_and_*")
        op = find_and_modify(
            self._namespace,
            filter,
            projection=projection_document(projection),
            sort=sort,
            hint=hint,
            let=let,
            comment=comment,
            **self._write_settings(session),
            **change,
            **extra,
        )
        document: _DocumentType | None = await self._run(op, session, raw_data)
        return document

    async def find_one_and_delete(
        self,
        filter: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> _DocumentType | None:
        """Delete one document matching ``filter`` and return it (findAndModify with ``remove``), or
        None if nothing matches.

        ``sort`` picks which document when several match; ``projection`` limits the fields returned
        (a mapping or a list of field names); ``hint``, ``let``, ``collation`` and ``max_time_ms``
        are the command's options, any other keyword raises InvalidArgument. Raises OperationFailure
        (WriteConcernError for a write concern error). A retryable write: retried once on a
        retryable error when ``retryWrites`` is on (the default).
        """
        return await self._find_and_modify(
            filter, projection, sort, hint, let, comment, kwargs, session, remove=True
        )

    async def find_one_and_replace(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: ReturnDocument | bool = ReturnDocument.BEFORE,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> _DocumentType | None:
        """Replace one document matching ``filter`` with ``replacement`` and return it
        (findAndModify), or None if nothing matches and no document was upserted.

        ``return_document`` chooses the version returned: ``ReturnDocument.BEFORE`` (the default,
        the original document) or ``ReturnDocument.AFTER`` (the replacement as stored, or the
        upserted document). ``replacement`` must not contain ``$`` operators (InvalidArgument).
        ``upsert=True`` inserts it when nothing matches; ``sort`` picks which document when several
        match; ``projection`` limits the fields returned; ``hint``, ``let``, ``collation``,
        ``max_time_ms`` and ``bypass_document_validation`` are the command's options, any other
        keyword raises InvalidArgument. Raises OperationFailure (DuplicateKeyError,
        WriteConcernError). A retryable write, retried once when ``retryWrites`` is on.
        """
        return await self._find_and_modify(
            filter, projection, sort, hint, let, comment, kwargs, session,
            replacement=replacement, upsert=upsert or None, return_document=return_document,
        )

    async def find_one_and_update(
        self,
        filter: Mapping[str, Any],
        update: Any,
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: ReturnDocument | bool = ReturnDocument.BEFORE,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> _DocumentType | None:
        """Apply ``update`` to one document matching ``filter`` and return it (findAndModify), or
        None if nothing matches and no document was upserted.

        ``update`` is an update document of ``$`` operators or an aggregation pipeline (anything
        else raises InvalidArgument). ``return_document`` chooses the version returned:
        ``ReturnDocument.BEFORE`` (the default) or ``ReturnDocument.AFTER`` (as updated, or the
        upserted document). ``upsert=True`` inserts a document when nothing matches;
        ``array_filters`` selects the array elements to update; ``sort`` picks which document when
        several match; ``projection`` limits the fields returned; ``hint``, ``let``, ``collation``,
        ``max_time_ms`` and ``bypass_document_validation`` are the command's options, any other
        keyword raises InvalidArgument. Raises OperationFailure (DuplicateKeyError,
        WriteConcernError). A retryable write, retried once when ``retryWrites`` is on.
        """
        if update is None:
            raise InvalidArgument("update must be an update document or a pipeline")
        return await self._find_and_modify(
            filter, projection, sort, hint, let, comment, kwargs, session,
            update=update, upsert=upsert or None, return_document=return_document,
            array_filters=array_filters,
        )
