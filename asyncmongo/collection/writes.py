"""AsyncCollection's writes: insert, update, replace, delete and bulk_write.

Each builds write statements and runs them through ``asyncmongo._bulk`` (which splits batches
and retries); the update/replace/delete family shares :meth:`CollectionWrites._write_one`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from asyncmongo._adopt import adopt_write_model
from asyncmongo._bulk import run_bulk, run_writes
from asyncmongo._scope import new_id_class
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.collection.base import CollectionBase
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.bulk import BulkResult
from asyncmongo.core.operations.replies import check_write_reply
from asyncmongo.core.operations.statements import (
    StatementKind,
    WriteStatement,
    delete_statement,
    insert_statement,
    update_statement,
)
from asyncmongo.core.operations.write import (
    DEFAULT_WRITE_OPTIONS,
    InsertOne,
    WriteCommand,
    WriteOne,
    WriteOptions,
    write_options,
)
from asyncmongo.errors import InvalidArgument
from asyncmongo.operations import WriteModel, _WriteOp
from asyncmongo.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)

__all__ = ["CollectionWrites"]

_R = TypeVar("_R", UpdateResult, DeleteResult)


class CollectionWrites(CollectionBase[_DocumentType]):
    """The write methods of :class:`~asyncmongo.collection.AsyncCollection`."""

    __slots__ = ()

    def _run_single(
        self, op: InsertOne | WriteOne, session: Any
    ) -> Awaitable[Mapping[str, Any]]:
        """Run the fast operation of a single write: the reply, checked for ``ok: 0`` only (a
        plain function returning what to await, not one more coroutine)."""
        client = self._client
        return client._run(op, session, client._next_operation_id(), timeout_ms=self._timeout_ms)

    async def _write_one(
        self,
        statement: WriteStatement,
        options: WriteOptions,
        result: Callable[[Mapping[str, Any] | None, bool], _R],
        session: Any,
    ) -> _R:
        """The update/replace/delete family: one statement, its reply checked and shaped
        (an unacknowledged write has no reply to check)."""
        context = self._write_context or self._context_for_write()
        if context.acknowledged and options is DEFAULT_WRITE_OPTIONS:
            # the usual call: one statement in one command, the collection's parts made once
            reply = await self._run_single(WriteOne(context, statement), session)
            if "writeErrors" in reply or "writeConcernError" in reply:
                check_write_reply(reply)  # (the ok: 0 error was WriteOne.parse's)
            return result(reply, True)
        concern = self._write_concern_for(session)
        (reply,) = await run_writes(
            self._client,
            self._namespace,
            [statement],
            concern,
            self._codec_options,
            options,
            session,
            self._client._deadline_for(self._timeout_ms),
        )
        if not concern.acknowledged:
            return result(None, False)
        check_write_reply(reply)
        return result(reply, True)

    async def insert_one(
        self,
        document: _DocumentType | RawBSONDocument,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> InsertOneResult:
        """Insert one document (an ``_id`` is added to it when missing)."""
        context = self._write_context or self._context_for_write()
        client = self._client
        if (
            context.acknowledged
            and bypass_document_validation is None
            and comment is None
            and raw_data is None
        ):  # the usual call: the collection's parts made once (insert_statement's checks)
            if type(document) is dict:
                if "_id" not in document:
                    document["_id"] = context.new_id()
            else:
                insert_statement(document, context.new_id)
            reply = await self._run_single(InsertOne(context, document), session)
            if "writeErrors" in reply or "writeConcernError" in reply:
                check_write_reply(reply)  # (the ok: 0 error was InsertOne.parse's)
            return InsertOneResult(document.get("_id"), True)
        statement = insert_statement(document, context.new_id)
        concern = self._write_concern_for(session)
        options = write_options(True, bypass_document_validation, comment, raw_data=raw_data)
        # run_writes' loop, unrolled: one statement always goes in one command (or raises
        # DocumentTooLarge when built)
        command = WriteCommand(
            self._namespace,
            StatementKind.INSERT,
            [statement],
            concern,
            self._codec_options,
            options,
        )
        batch = await client._run(
            command, session, client._next_operation_id(), timeout_ms=self._timeout_ms
        )
        check_write_reply(batch.reply)
        return InsertOneResult(document.get("_id"), concern.acknowledged)

    async def insert_many(
        self,
        documents: Iterable[_DocumentType | RawBSONDocument],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> InsertManyResult:
        """Insert documents in order (``ordered=False``: all are attempted).

        Failures raise BulkWriteError with each error's index in ``documents``. Any error
        raised (BulkWriteError, a network error, ...) has ``partial_result``: the
        BulkWriteResult of the inserts acknowledged before it (None when w:0).
        """
        if isinstance(documents, Mapping) or not isinstance(documents, Sequence | list):
            documents = list(documents) if not isinstance(documents, Mapping) else documents
        if isinstance(documents, Mapping) or not documents:
            raise InvalidArgument("documents must be a non-empty list of documents")
        new_id = new_id_class(self._codec_options)
        statements = [insert_statement(document, new_id) for document in documents]
        options = write_options(ordered, bypass_document_validation, comment, None, raw_data)
        concern = self._write_concern_for(session)
        await self._bulk(statements, options, session, concern)
        return InsertManyResult(
            [document.get("_id") for document in documents], concern.acknowledged
        )

    async def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: _DocumentType | RawBSONDocument,
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> UpdateResult:
        """Replace the first document matching ``filter`` with ``replacement`` (CRUD replaceOne).

        ``replacement`` is a whole document without ``$`` operators (InvalidArgument otherwise; to
        change fields use ``update_one()``); the ``_id`` of the matched document is kept. With
        ``upsert=True`` the replacement is inserted when nothing matches. ``sort`` picks which
        document is replaced when several match (MongoDB 8.0+); ``hint``, ``collation`` and ``let``
        are the update command's options; ``session`` runs it in an explicit session.

        Returns an UpdateResult (``matched_count``, ``modified_count``, ``upserted_id``; only
        ``acknowledged`` under w:0). Raises WriteError (DuplicateKeyError for a unique index) or
        WriteConcernError. A retryable write: retried once on a retryable error when ``retryWrites``
        is on (the default).
        """
        statement = update_statement(
            filter, replacement, multi=False, replace=True, upsert=upsert or None,
            collation=collation, hint=hint, sort=sort,
        )
        options = write_options(True, bypass_document_validation, comment, let, raw_data)
        return await self._write_one(statement, options, UpdateResult.from_reply, session)

    async def update_one(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> UpdateResult:
        """Apply ``update`` to the first document matching ``filter`` (CRUD updateOne).

        ``update`` is an update document of ``$`` operators (``{"$set": {...}}``) or an aggregation
        pipeline (a list of stages); a plain document or an empty one raises InvalidArgument (to
        replace a document use ``replace_one()``). With ``upsert=True`` a document built from the
        filter and the update is inserted when nothing matches. ``array_filters`` selects the array
        elements ``$[<identifier>]`` updates; ``sort`` picks which document is updated when several
        match (MongoDB 8.0+); ``hint``, ``collation`` and ``let`` are the update command's options;
        ``session`` runs it in an explicit session.

        Returns an UpdateResult (``matched_count``, ``modified_count``, ``upserted_id``; only
        ``acknowledged`` under w:0). Raises WriteError (DuplicateKeyError for a unique index) or
        WriteConcernError. A retryable write: retried once on a retryable error when ``retryWrites``
        is on (the default).
        """
        statement = update_statement(
            filter, update, multi=False, upsert=upsert or None, collation=collation,
            array_filters=array_filters, hint=hint, sort=sort,
        )
        options = write_options(True, bypass_document_validation, comment, let, raw_data)
        return await self._write_one(statement, options, UpdateResult.from_reply, session)

    async def update_many(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        array_filters: list[Mapping[str, Any]] | None = None,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> UpdateResult:
        """Apply ``update`` to every document matching ``filter`` (CRUD updateMany).

        ``update`` is an update document of ``$`` operators or an aggregation pipeline, as for
        ``update_one()`` (InvalidArgument otherwise). With ``upsert=True`` one document is inserted
        when nothing matches. ``array_filters``, ``hint``, ``collation`` and ``let`` are the update
        command's options; ``session`` runs it in an explicit session.

        Returns an UpdateResult with the counts over all the matched documents (only
        ``acknowledged`` under w:0). Raises WriteError or WriteConcernError; documents updated
        before a write error stay updated. Not retried (a multi-document write is not a retryable
        write).
        """
        statement = update_statement(
            filter, update, multi=True, upsert=upsert or None, collation=collation,
            array_filters=array_filters, hint=hint,
        )
        options = write_options(True, bypass_document_validation, comment, let, raw_data)
        return await self._write_one(statement, options, UpdateResult.from_reply, session)

    async def _delete(
        self,
        filter: Mapping[str, Any],
        multi: bool,
        collation: Mapping[str, Any] | None,
        hint: Any,
        let: Mapping[str, Any] | None,
        comment: Any,
        raw_data: bool | None,
        session: Any,
    ) -> DeleteResult:
        statement = delete_statement(filter, multi=multi, collation=collation, hint=hint)
        options = write_options(True, None, comment, let, raw_data)
        return await self._write_one(statement, options, DeleteResult, session)

    async def delete_one(
        self,
        filter: Mapping[str, Any],
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> DeleteResult:
        """Delete the first document matching ``filter`` (CRUD deleteOne; ``{}`` matches any).

        ``hint``, ``collation`` and ``let`` are the delete command's options; ``session`` runs it in
        an explicit session. Returns a DeleteResult whose ``deleted_count`` is 0 or 1 (only
        ``acknowledged`` under w:0). Raises WriteError or WriteConcernError. A retryable write:
        retried once on a retryable error when ``retryWrites`` is on (the default).
        """
        return await self._delete(filter, False, collation, hint, let, comment, raw_data, session)

    async def delete_many(
        self,
        filter: Mapping[str, Any],
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> DeleteResult:
        """Delete every document matching ``filter`` (CRUD deleteMany; ``{}`` deletes them all but
        keeps the collection and its indexes, unlike ``drop``).

        ``hint``, ``collation`` and ``let`` are the delete command's options; ``session`` runs it in
        an explicit session. Returns a DeleteResult with ``deleted_count`` (only ``acknowledged``
        under w:0). Raises WriteError or WriteConcernError. Not retried (a multi-document write is
        not a retryable write).
        """
        return await self._delete(filter, True, collation, hint, let, comment, raw_data, session)

    async def bulk_write(
        self,
        requests: Iterable[_WriteOp[_DocumentType]],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        raw_data: bool | None = None,
    ) -> BulkWriteResult:
        """Run write models in batches; BulkWriteError carries every error with the index of
        its model in ``requests``.

        Every error raised out of it, whatever its type (BulkWriteError, AutoReconnect after
        the retry, a timeout, DocumentTooLarge, ...), has ``partial_result``: the
        BulkWriteResult of the batches the server acknowledged before the failure, so the
        caller knows what was already applied (an ordered bulk whose second batch fails
        counts the first). It is None for an unacknowledged (w:0) write. BulkWriteError
        keeps PyMongo's ``details`` (the same totals plus the errors) as well.
        """
        if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
            raise InvalidArgument("requests must be a list of write models")
        statements = []
        new_id = new_id_class(self._codec_options)
        for request in requests:
            request = adopt_write_model(request)
            if not isinstance(request, WriteModel):
                raise InvalidArgument(f"{request!r} is not a valid request (a write model)")
            statements.append(request._statement(new_id))
        options = write_options(ordered, bypass_document_validation, comment, let, raw_data)
        concern = self._write_concern_for(session)
        result = await self._bulk(statements, options, session, concern)
        return BulkWriteResult(result.document(), concern.acknowledged)

    async def _bulk(
        self,
        statements: Sequence[WriteStatement],
        options: WriteOptions,
        session: Any,
        concern: WriteConcern,
    ) -> BulkResult:
        return await run_bulk(
            self._client, self._namespace, statements, concern, self._codec_options, options,
            session, self._client._deadline_for(self._timeout_ms),
        )
