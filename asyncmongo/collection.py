"""AsyncCollection: CRUD, bulk writes, indexes and management of one collection.

Methods are thin (STYLE 10): build an operation from ``asyncmongo.core.operations``, run it
through the client, shape the result. Names and signatures are PyMongo's
``AsyncCollection``'s. Where we differ:

- ``session=`` runs the method's operations in that session (``sessions_bound``, issue #10).
- bad arguments raise :class:`~asyncmongo.errors.InvalidArgument` (also a ValueError and a
  TypeError, so PyMongo-style ``except`` clauses still catch it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bulk import run_bulk, run_writes
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import aggregate as aggregate_ops
from asyncmongo.core.operations import count as count_ops
from asyncmongo.core.operations import indexes as index_ops
from asyncmongo.core.operations import management
from asyncmongo.core.operations import search_indexes as search_ops
from asyncmongo.core.operations.bulk import BulkResult
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import (
    Namespace,
    check_collection_name,
    check_document,
    index_keys,
    index_name,
)
from asyncmongo.core.operations.cursors import CursorPage
from asyncmongo.core.operations.distinct import distinct as distinct_op
from asyncmongo.core.operations.find import Find
from asyncmongo.core.operations.find_and_modify import ReturnDocument, find_and_modify
from asyncmongo.core.operations.replies import check_write_reply
from asyncmongo.core.operations.statements import (
    WriteStatement,
    delete_statement,
    insert_statement,
    update_statement,
)
from asyncmongo.core.operations.write import WriteOptions
from asyncmongo.core.selection import ReadPreference
from asyncmongo.cursor import AsyncCommandCursor, AsyncCursor, find_options
from asyncmongo.errors import InvalidArgument, InvalidOperation
from asyncmongo.operations import IndexModel, SearchIndexModel, WriteModel
from asyncmongo.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)
from asyncmongo.scope import NamedScope, no_session
from asyncmongo.session import sessions_bound

if TYPE_CHECKING:
    from asyncmongo.database import AsyncDatabase

__all__ = ["AsyncCollection", "ReturnDocument"]

_T = TypeVar("_T")
_R = TypeVar("_R", UpdateResult, DeleteResult)

#: PyMongo passes some options under the server's camelCase names in ``**kwargs``.
_ALIASES = {
    "maxTimeMS": "max_time_ms",
    "batchSize": "batch_size",
    "allowDiskUse": "allow_disk_use",
    "bypassDocumentValidation": "bypass_document_validation",
    "arrayFilters": "array_filters",
    "maxAwaitTimeMS": "max_await_time_ms",
    "commitQuorum": "commit_quorum",
    "rawData": "raw_data",
}


def _command_options(
    kwargs: Mapping[str, Any], allowed: frozenset[str], what: str
) -> tuple[dict[str, Any], bool | None]:
    """The command's options from ``kwargs`` (see _snake), and ``raw_data`` apart."""
    options = _snake(kwargs, allowed, what)
    return options, options.pop("raw_data", None)


def _snake(kwargs: Mapping[str, Any], allowed: frozenset[str], what: str) -> dict[str, Any]:
    """Normalise camelCase aliases and refuse unknown keywords (a typo must not be ignored)."""
    result: dict[str, Any] = {}
    for key, value in kwargs.items():
        name = _ALIASES.get(key, key)
        if name not in allowed:
            raise InvalidArgument(f"{what}() got an unexpected keyword argument {key!r}")
        result[name] = value
    return result


@sessions_bound
class AsyncCollection(NamedScope["AsyncDatabase"]):
    """One collection; ``db["name"]`` or ``db.get_collection("name", ...)``."""

    __slots__ = ("_namespace",)

    _ITEM_HINT = "coll[{name}] for a sub-collection"

    def __init__(
        self,
        database: AsyncDatabase,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> None:
        super().__init__(
            database,
            check_collection_name(name),
            codec_options,
            read_preference,
            write_concern,
            read_concern,
        )
        self._namespace = Namespace(database.name, name)

    # -- identity and settings ---------------------------------------------------------------

    def __getattr__(self, name: str) -> AsyncCollection:
        if name.startswith("_"):
            raise self._private_attribute(name)
        return self[name]

    def __getitem__(self, name: str) -> AsyncCollection:
        settings = (self._codec_options, self._read_preference, self._write_concern)
        return self._parent.get_collection(f"{self._name}.{name}", *settings, self._read_concern)

    @property
    def full_name(self) -> str:
        return self._namespace.full_name

    @property
    def database(self) -> AsyncDatabase:
        return self._parent

    @property
    def _client(self) -> Any:
        return self._parent.client

    async def _run(self, op: CommandOperation[_T], raw_data: bool | None = None) -> _T:
        """Run one command operation (with ``rawData`` when given) through the client."""
        result: _T = await self._client._run_operation(_raw(op, raw_data))
        return result

    # -- writes -----------------------------------------------------------------------------

    async def _write(
        self, statements: Sequence[WriteStatement], options: WriteOptions
    ) -> list[Mapping[str, Any]]:
        return await run_writes(
            self._client,
            self._namespace,
            statements,
            self._write_concern,
            self._codec_options,
            options,
        )

    async def _write_one(
        self, statement: WriteStatement, options: WriteOptions, result: type[_R]
    ) -> _R:
        """The update/replace/delete family: one statement, its reply checked and shaped
        (an unacknowledged write has no reply to check)."""
        (reply,) = await self._write([statement], options)
        if not self._write_concern.acknowledged:
            return result(None, False)
        check_write_reply(reply)
        return result(reply, True)

    async def insert_one(
        self,
        document: Any,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> InsertOneResult:
        """Insert one document (an ``_id`` is added to it when missing)."""
        no_session(session)
        statement = insert_statement(document)
        options = WriteOptions(True, bypass_document_validation, comment, raw_data=raw_data)
        (reply,) = await self._write([statement], options)
        check_write_reply(reply)
        return InsertOneResult(document.get("_id"), self._write_concern.acknowledged)

    async def insert_many(
        self,
        documents: Any,
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> InsertManyResult:
        """Insert documents in order (``ordered=False``: all are attempted).

        Failures raise BulkWriteError with each error's index in ``documents``.
        """
        no_session(session)
        if isinstance(documents, Mapping) or not isinstance(documents, Sequence | list):
            documents = list(documents) if not isinstance(documents, Mapping) else documents
        if isinstance(documents, Mapping) or not documents:
            raise InvalidArgument("documents must be a non-empty list of documents")
        statements = [insert_statement(document) for document in documents]
        options = WriteOptions(ordered, bypass_document_validation, comment, None, raw_data)
        await self._bulk(statements, options)
        return InsertManyResult(
            [document.get("_id") for document in documents], self._write_concern.acknowledged
        )

    async def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
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
        no_session(session)
        statement = update_statement(
            filter, replacement, multi=False, replace=True, upsert=upsert or None,
            collation=collation, hint=hint, sort=sort,
        )
        options = WriteOptions(True, bypass_document_validation, comment, let, raw_data)
        return await self._write_one(statement, options, UpdateResult)

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
        no_session(session)
        statement = update_statement(
            filter, update, multi=False, upsert=upsert or None, collation=collation,
            array_filters=array_filters, hint=hint, sort=sort,
        )
        options = WriteOptions(True, bypass_document_validation, comment, let, raw_data)
        return await self._write_one(statement, options, UpdateResult)

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
        no_session(session)
        statement = update_statement(
            filter, update, multi=True, upsert=upsert or None, collation=collation,
            array_filters=array_filters, hint=hint,
        )
        options = WriteOptions(True, bypass_document_validation, comment, let, raw_data)
        return await self._write_one(statement, options, UpdateResult)

    async def _delete(
        self,
        filter: Mapping[str, Any],
        multi: bool,
        collation: Mapping[str, Any] | None,
        hint: Any,
        let: Mapping[str, Any] | None,
        comment: Any,
        raw_data: bool | None,
    ) -> DeleteResult:
        statement = delete_statement(filter, multi=multi, collation=collation, hint=hint)
        options = WriteOptions(True, None, comment, let, raw_data)
        return await self._write_one(statement, options, DeleteResult)

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
        no_session(session)
        return await self._delete(filter, False, collation, hint, let, comment, raw_data)

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
        no_session(session)
        return await self._delete(filter, True, collation, hint, let, comment, raw_data)

    async def bulk_write(
        self,
        requests: Iterable[WriteModel],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        raw_data: bool | None = None,
    ) -> BulkWriteResult:
        """Run write models in batches; BulkWriteError carries every error with the index of
        its model in ``requests``."""
        no_session(session)
        if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
            raise InvalidArgument("requests must be a list of write models")
        statements = []
        for request in requests:
            if not isinstance(request, WriteModel):
                raise InvalidArgument(f"{request!r} is not a valid request (a write model)")
            statements.append(request._statement())
        options = WriteOptions(ordered, bypass_document_validation, comment, let, raw_data)
        result = await self._bulk(statements, options)
        return BulkWriteResult(result.document(), self._write_concern.acknowledged)

    async def _bulk(
        self, statements: Sequence[WriteStatement], options: WriteOptions
    ) -> BulkResult:
        return await run_bulk(
            self._client,
            self._namespace,
            statements,
            self._write_concern,
            self._codec_options,
            options,
        )

    # -- reads ------------------------------------------------------------------------------

    def find(self, filter: Any = None, projection: Any = None, **kwargs: Any) -> AsyncCursor:
        """A cursor over the matching documents (the command runs on the first read).

        Keywords: skip, limit, sort, batch_size, hint, collation, comment, let, max_time_ms,
        max_await_time_ms, allow_disk_use, cursor_type, no_cursor_timeout,
        allow_partial_results, return_key, show_record_id, max, min.
        """
        no_session(kwargs.pop("session", None))
        if filter is not None:
            check_document(filter, "filter")
        return AsyncCursor(self, find_options(filter, projection, **kwargs))

    async def find_one(self, filter: Any = None, *args: Any, **kwargs: Any) -> Any:
        """The first matching document or None; a non-mapping filter means ``{_id: filter}``."""
        if filter is not None and not isinstance(filter, Mapping):
            filter = {"_id": filter}
        no_session(kwargs.pop("session", None))
        kwargs["limit"] = 1  # CRUD findOne: limit 1 and singleBatch, no batchSize
        kwargs["single_batch"] = True
        options = find_options(filter, *args, **kwargs)
        op = Find(
            self._namespace, options, self._read_preference, self._read_concern, self._codec_options
        )
        page: CursorPage = await self._client._run_cursor_operation(op)
        if page.cursor_id and page.address is not None:  # a server that kept it open anyway
            await AsyncCommandCursor(self._client, page, self._codec_options).close()
        return page.documents[0] if page.documents else None

    async def find_raw_batches(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidOperation("find_raw_batches is not implemented by asyncmongo")

    async def count_documents(
        self, filter: Mapping[str, Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> int:
        """The number of matching documents (an aggregate; exact, unlike the estimate)."""
        no_session(session)
        options, raw_data = _command_options(kwargs, _COUNT_OPTIONS, "count_documents")
        settings = self._read_settings()
        op = count_ops.count_documents(
            self._namespace, filter, comment=comment, **settings, **options
        )
        return await self._run(op, raw_data)

    async def estimated_document_count(self, comment: Any = None, **kwargs: Any) -> int:
        """The collection's document count from its metadata (fast; no filter)."""
        options, raw_data = _command_options(kwargs, _MAX_TIME, "estimated_document_count")
        settings = self._read_settings()
        op = count_ops.estimated_document_count(
            self._namespace, comment=comment, **settings, **options
        )
        return await self._run(op, raw_data)

    async def distinct(
        self,
        key: str,
        filter: Mapping[str, Any] | None = None,
        session: Any = None,
        comment: Any = None,
        hint: Any = None,
        **kwargs: Any,
    ) -> list[Any]:
        no_session(session)
        options, raw_data = _command_options(kwargs, _MAX_TIME | {"collation"}, "distinct")
        settings = self._read_settings()
        op = distinct_op(
            self._namespace, key, filter, comment=comment, hint=hint, **settings, **options
        )
        return await self._run(op, raw_data)

    async def aggregate(
        self,
        pipeline: list[Mapping[str, Any]],
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> AsyncCommandCursor:
        """Run the pipeline; a cursor over its results ($out/$merge: usually empty)."""
        no_session(session)
        return await _aggregate(self, self._namespace, False, pipeline, let, comment, kwargs)

    # -- find and modify --------------------------------------------------------------------

    async def _find_and_modify(self, filter: Any, session: Any, **options: Any) -> Any:
        no_session(session)
        extra, raw_data = _command_options(options.pop("kwargs"), _FAM_OPTIONS, "find_one_and_*")
        settings = self._write_settings()
        op = find_and_modify(self._namespace, filter, **settings, **options, **extra)
        return await self._run(op, raw_data)

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
    ) -> Any:
        return await self._find_and_modify(
            filter,
            session,
            remove=True,
            projection=_projection(projection),
            sort=sort,
            hint=hint,
            let=let,
            comment=comment,
            kwargs=kwargs,
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
    ) -> Any:
        return await self._find_and_modify(
            filter,
            session,
            replacement=replacement,
            projection=_projection(projection),
            sort=sort,
            upsert=upsert or None,
            return_document=return_document,
            hint=hint,
            let=let,
            comment=comment,
            kwargs=kwargs,
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
    ) -> Any:
        if update is None:
            raise InvalidArgument("update must be an update document or a pipeline")
        return await self._find_and_modify(
            filter,
            session,
            update=update,
            projection=_projection(projection),
            sort=sort,
            upsert=upsert or None,
            return_document=return_document,
            array_filters=array_filters,
            hint=hint,
            let=let,
            comment=comment,
            kwargs=kwargs,
        )

    # -- indexes ----------------------------------------------------------------------------

    async def create_index(
        self, keys: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> str:
        """Create one index; returns its name (generated as ``a_1_b_-1`` if not given)."""
        command_options = (
            "commitQuorum",
            "maxTimeMS",
            "commit_quorum",
            "max_time_ms",
            "raw_data",
            "rawData",
        )
        options = {k: v for k, v in kwargs.items() if k not in command_options}
        model = IndexModel(keys, **options)
        names = await self.create_indexes(
            [model],
            session=session,
            comment=comment,
            **{k: v for k, v in kwargs.items() if k in command_options},
        )
        return names[0]

    async def create_indexes(
        self, indexes: Sequence[IndexModel], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        no_session(session)
        allowed = _MAX_TIME | {"commit_quorum"}
        options, raw_data = _command_options(kwargs, allowed, "create_indexes")
        documents = []
        for index in indexes:
            if not isinstance(index, IndexModel):
                raise InvalidArgument(f"{index!r} is not an IndexModel")
            documents.append(index.document)
        settings = self._write_settings()
        op = index_ops.create_indexes(
            self._namespace, documents, comment=comment, **settings, **options
        )
        return await self._run(op, raw_data)

    async def list_indexes(
        self, session: Any = None, comment: Any = None, raw_data: bool | None = None
    ) -> AsyncCommandCursor:
        no_session(session)
        op = index_ops.list_indexes(
            self._namespace,
            comment=comment,
            read_preference=self._read_preference,
            codec_options=self._codec_options,
        )
        page = await self._client._run_cursor_operation(_raw(op, raw_data))
        return AsyncCommandCursor(self._client, page, self._codec_options, comment=comment)

    async def index_names(self, session: Any = None, comment: Any = None) -> list[str]:
        """The names of the collection's indexes (index-management's listIndexNames; not in
        PyMongo, whose index_information() gives the names as keys)."""
        cursor = await self.list_indexes(session=session, comment=comment)
        return [index["name"] for index in await cursor.to_list()]

    async def index_information(
        self, session: Any = None, comment: Any = None
    ) -> dict[str, dict[str, Any]]:
        """``{name: {"key": [(field, direction), ...], <options>}}`` (PyMongo's shape)."""
        cursor = await self.list_indexes(session=session, comment=comment)
        info: dict[str, dict[str, Any]] = {}
        for index in await cursor.to_list():
            index = dict(index)
            name = index.pop("name")
            index["key"] = list(index["key"].items())
            info[name] = index
        return info

    async def drop_index(
        self, index_or_name: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Drop one index, by name or by its keys (``"*"`` is refused: use drop_indexes)."""
        name = index_or_name
        if isinstance(index_or_name, IndexModel):
            name = index_or_name.document["name"]
        elif not isinstance(index_or_name, str):
            name = index_name(index_keys(index_or_name))
        if name == "*":
            raise InvalidArgument("use drop_indexes() to drop all indexes")
        await self._drop_indexes(name, session, comment, kwargs)

    async def drop_indexes(self, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop every index but ``_id_``."""
        await self._drop_indexes("*", session, comment, kwargs)

    async def _drop_indexes(
        self, index: str, session: Any, comment: Any, kwargs: Mapping[str, Any]
    ) -> None:
        no_session(session)
        options, raw_data = _command_options(kwargs, _MAX_TIME, "drop_index")
        settings = self._write_settings()
        op = index_ops.drop_indexes(self._namespace, index, comment=comment, **settings, **options)
        await self._run(op, raw_data)

    # -- search indexes (Atlas) -------------------------------------------------------------

    async def create_search_index(
        self, model: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> str:
        """Create one search index (a SearchIndexModel or its fields as a mapping); its name."""
        names = await self.create_search_indexes([model], session, comment, **kwargs)
        return names[0]

    async def create_search_indexes(
        self, models: Iterable[Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """createSearchIndexes (no read or write concern is sent: Atlas refuses them)."""
        no_session(session)
        _snake(kwargs, frozenset(), "create_search_indexes")
        documents = []
        for model in models:
            if isinstance(model, Mapping):
                model = SearchIndexModel(**model)
            if not isinstance(model, SearchIndexModel):
                raise InvalidArgument(f"{model!r} is not a SearchIndexModel")
            documents.append(model.document)
        op = search_ops.create_search_indexes(
            self._namespace, documents, comment=comment, codec_options=self._codec_options
        )
        return await self._run(op)

    async def update_search_index(
        self,
        name: str,
        definition: Mapping[str, Any],
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> None:
        no_session(session)
        _snake(kwargs, frozenset(), "update_search_index")
        op = search_ops.update_search_index(
            self._namespace, name, definition, comment=comment, codec_options=self._codec_options
        )
        await self._run(op)

    async def drop_search_index(
        self, name: str, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Drop a search index (a missing one is not an error: drops are idempotent)."""
        no_session(session)
        _snake(kwargs, frozenset(), "drop_search_index")
        op = search_ops.drop_search_index(
            self._namespace, name, comment=comment, codec_options=self._codec_options
        )
        await self._run(op)

    async def list_search_indexes(
        self, name: str | None = None, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> AsyncCommandCursor:
        """A cursor over the search indexes (``$listSearchIndexes``); kwargs are aggregate's
        options (also accepted grouped as ``aggregation_options``, the spec's name)."""
        no_session(session)
        grouped = kwargs.pop("aggregation_options", None) or {}
        kwargs = {**check_document(grouped, "aggregation_options"), **kwargs}
        plain = self.with_options(read_concern=ReadConcern(), write_concern=WriteConcern())
        pipeline = search_ops.list_search_indexes_pipeline(name)
        return await _aggregate(plain, self._namespace, False, pipeline, None, comment, kwargs)

    # -- management -------------------------------------------------------------------------

    async def drop(
        self, session: Any = None, comment: Any = None, encrypted_fields: Any = None
    ) -> None:
        """Drop the collection (dropping one that does not exist is not an error)."""
        await self._parent.drop_collection(self._name, session=session, comment=comment)

    async def rename(
        self, new_name: str, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Mapping[str, Any]:
        """renameCollection to ``new_name`` in the same database (``dropTarget=True`` to
        replace an existing one)."""
        no_session(session)
        check_collection_name(new_name)
        drop_target = kwargs.pop("dropTarget", kwargs.pop("drop_target", None))
        if kwargs:
            raise InvalidArgument(f"rename() got unexpected keyword arguments {sorted(kwargs)}")
        op = management.rename_collection(
            self._namespace,
            Namespace(self._namespace.database, new_name),
            drop_target=drop_target,
            comment=comment,
            **self._write_settings(),
        )
        return await self._run(op)

    async def options(self, session: Any = None, comment: Any = None) -> dict[str, Any]:
        """The options the collection was created with (``{}`` when there are none)."""
        cursor = await self._parent.list_collections(
            session=session, filter={"name": self._name}, comment=comment
        )
        for info in await cursor.to_list():
            options = dict(info.get("options", {}))
            options.pop("create", None)
            return options
        return {}


def _projection(projection: Any) -> Mapping[str, Any] | None:
    from asyncmongo.core.operations.find import projection_document

    return projection_document(projection)


async def _aggregate(
    owner: Any,
    namespace: Namespace,
    database_level: bool,
    pipeline: Any,
    let: Mapping[str, Any] | None,
    comment: Any,
    kwargs: Mapping[str, Any],
) -> AsyncCommandCursor:
    """Collection and database aggregate share this."""
    options, raw_data = _command_options(kwargs, _AGGREGATE_OPTIONS, "aggregate")
    max_await_time_ms = options.pop("max_await_time_ms", None)
    op = aggregate_ops.aggregate(
        namespace,
        pipeline,
        database_level=database_level,
        let=let,
        comment=comment,
        read_preference=owner.read_preference,
        read_concern=owner.read_concern,
        write_concern=owner.write_concern,
        codec_options=owner.codec_options,
        **options,
    )
    client = owner.database.client  # a database's ``database`` is itself
    page: CursorPage = await client._run_cursor_operation(_raw(op, raw_data))
    return AsyncCommandCursor(
        client,
        page,
        owner.codec_options,
        batch_size=options.get("batch_size") or 0,
        comment=comment,
        max_await_time_ms=max_await_time_ms,
    )


def _raw(op: CommandOperation[_T], raw_data: bool | None) -> CommandOperation[_T]:
    """Attach ``rawData`` (sent only to 8.2+ servers; CRUD says to discourage its use, so it
    is an undocumented keyword here)."""
    if raw_data is not None:
        op.raw_data = raw_data
    return op


_RAW = frozenset({"raw_data"})
_MAX_TIME = _RAW | {"max_time_ms"}
_COUNT_OPTIONS = _MAX_TIME | {"skip", "limit", "collation", "hint"}
_FAM_OPTIONS = _RAW | {
    "collation",
    "max_time_ms",
    "bypass_document_validation",
    "array_filters",
    "upsert",
}
_AGGREGATE_OPTIONS = _RAW | frozenset(
    {
        "allow_disk_use",
        "max_time_ms",
        "batch_size",
        "collation",
        "hint",
        "bypass_document_validation",
        "max_await_time_ms",
    }
)
