"""AsyncDatabase: collections, commands, aggregation and management of one database.

PyMongo's ``AsyncDatabase`` names and signatures; settings (codec options, read preference,
read and write concern) are inherited from the client unless given.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, cast, overload

from asyncmongo._scope import ClientScope, NamedScope, adopt_codec_options
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.typings import _DocumentType, _DocumentTypeArg
from asyncmongo.collection import AsyncCollection
from asyncmongo.collection.aggregate import aggregate_cursor
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import management
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.common import Namespace, check_database_name
from asyncmongo.core.operations.encrypted_fields import (
    STATE_COLLECTION_OPTIONS,
    state_collection_names,
)
from asyncmongo.core.operations.run_command import (
    RunCommand,
    command_document,
    run_cursor_command,
)
from asyncmongo.core.selection import PRIMARY, ReadPreference
from asyncmongo.cursor import AsyncCommandCursor, CursorType, open_command_cursor
from asyncmongo.errors import (
    CollectionInvalid,
    InvalidArgument,
    OperationFailure,
)

if TYPE_CHECKING:
    from asyncmongo.change_stream import AsyncChangeStream

__all__ = ["AsyncDatabase"]

NAMESPACE_EXISTS = 48
#: Where ``command`` runs without a read preference given (PyMongo's primary).
_PRIMARY_TARGET = Target.read(PRIMARY)


class AsyncDatabase(NamedScope[ClientScope], Generic[_DocumentType]):
    """One database; ``client["name"]`` or ``client.get_database("name", ...)``."""

    __slots__ = ()

    _ITEM_HINT = "db[{name}] for a collection"

    if TYPE_CHECKING:  # PyMongo's overloads: new codec options may bring a document type

        @overload
        def with_options(
            self,
            codec_options: None = None,
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncDatabase[_DocumentType]: ...

        @overload
        def with_options(
            self,
            codec_options: CodecOptions[_DocumentTypeArg],
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncDatabase[_DocumentTypeArg]: ...

        @overload
        def with_options(
            self,
            codec_options: CodecOptions[_DocumentTypeArg] | None = None,
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncDatabase[_DocumentType] | AsyncDatabase[_DocumentTypeArg]: ...

        def with_options(
            self,
            codec_options: CodecOptions[Any] | None = None,
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncDatabase[Any]: ...

    def __init__(
        self,
        client: ClientScope,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        super().__init__(
            client,
            check_database_name(name),
            codec_options,
            read_preference,
            write_concern,
            read_concern,
            timeout_ms,
        )

    def __getattr__(self, name: str) -> AsyncCollection[_DocumentType]:
        if name.startswith("_"):
            raise self._private_attribute(name)
        return self[name]

    def __getitem__(self, name: str) -> AsyncCollection[_DocumentType]:
        return AsyncCollection(self, name)

    @property
    def client(self) -> ClientScope:
        """The AsyncMongoClient this database belongs to."""
        return self._parent

    @property
    def _client(self) -> ClientScope:
        return self._parent

    @property
    def database(self) -> AsyncDatabase[_DocumentType]:
        """Itself (so database- and collection-level helpers share code)."""
        return self

    def get_collection(
        self,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> AsyncCollection[_DocumentType]:
        """The collection ``name`` of this database, with some settings replaced.

        Settings left as None (codec options, read preference, write and read concerns) are
        inherited from this database. Nothing is sent to the server: the collection is created on
        its first write (or by ``create_collection``). ``db.get_collection("x")`` is ``db["x"]``
        (and ``db.x``); an invalid name raises InvalidName.
        """
        return AsyncCollection(
            self, name, codec_options, read_preference, write_concern, read_concern, timeout_ms
        )

    # -- commands ---------------------------------------------------------------------------

    async def command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Any = None,
        read_preference: ReadPreference | None = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Mapping[str, Any]:
        """Run a command as written (specs/run-command: no concern is added); the reply.

        The read preference defaults to primary (not the database's), as in PyMongo.
        """
        if comment is not None:
            kwargs["comment"] = comment
        document: dict[str, Any]
        if command.__class__ is str and not kwargs:  # db.command("ping"): command_document's
            document = {command: value}  # first form, inline
        else:
            document = command_document(command, value, **kwargs)
        op = RunCommand(
            self._name,
            document,
            _PRIMARY_TARGET if read_preference is None else Target.read(read_preference),
            self._codec_options if codec_options is None else self._reply_codec_options(
                codec_options
            ),
            check and not allowable_errors,
            read_preference is not None,
        )
        reply: Mapping[str, Any] = await self._parent._run(op, session, timeout_ms=self._timeout_ms)
        return reply

    def _reply_codec_options(self, given: Any) -> CodecOptions:
        """The codec options a command's reply decodes with: ``given`` (asyncmongo's or
        PyMongo's) keeping this database's value classes, else the database's own."""
        if given is None:
            return self._codec_options
        return adopt_codec_options(given, self._codec_options)

    async def cursor_command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        read_preference: ReadPreference | None = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        batch_size: int = 0,
        timeout_mode: Any = None,
        **kwargs: Any,
    ) -> AsyncCommandCursor[_DocumentType]:
        """Run a command that returns a cursor (run-command: runCursorCommand) and iterate it.

        ``kwargs`` go into the command as in :meth:`command`; ``comment``, ``batch_size`` and
        ``max_await_time_ms`` only into the getMores (as PyMongo's ``cursor_command``). The
        getMores go to the server that answered the command.
        """
        document = command_document(command, value, **kwargs)
        codec = self._reply_codec_options(codec_options)
        op = run_cursor_command(
            self._name,
            document,
            read_preference or PRIMARY,
            codec,
            own_read_preference=read_preference is not None,
        )
        cursor_type = _cursor_type(document)
        return await open_command_cursor(
            self._client,
            op,
            session,
            codec,
            timeout_ms=self._timeout_ms,
            timeout_mode=timeout_mode,
            tailable=cursor_type is not CursorType.NON_TAILABLE,
            batch_size=batch_size,
            comment=comment,
            max_await_time_ms=max_await_time_ms,
            cursor_type=cursor_type,
        )

    async def run_command(self, command: Mapping[str, Any], **kwargs: Any) -> Mapping[str, Any]:
        """Alias of :meth:`command` for a command document (run-command spec's name)."""
        return await self.command(command, **kwargs)

    async def aggregate(
        self,
        pipeline: Sequence[Mapping[str, Any]],
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> AsyncCommandCursor[_DocumentType]:
        """Database-level aggregate (``$currentOp``, ``$documents``, ...)."""
        namespace = Namespace(self._name, "$cmd.aggregate")
        return await aggregate_cursor(
            self, namespace, True, pipeline, let, comment, kwargs, session
        )

    async def watch(
        self,
        pipeline: Sequence[Mapping[str, Any]] | None = None,
        full_document: str | None = None,
        resume_after: Mapping[str, Any] | None = None,
        max_await_time_ms: int | None = None,
        batch_size: int | None = None,
        collation: Mapping[str, Any] | None = None,
        start_at_operation_time: Any = None,
        session: Any = None,
        start_after: Mapping[str, Any] | None = None,
        comment: Any = None,
        full_document_before_change: str | None = None,
        show_expanded_events: bool | None = None,
    ) -> AsyncChangeStream[_DocumentType]:
        """A change stream of the changes to every collection of this database
        (asyncmongo.change_stream; PyMongo's signature)."""
        from asyncmongo.change_stream import watch

        return await watch(
            self, "database", pipeline, full_document, resume_after, max_await_time_ms, batch_size,
            collation, start_at_operation_time, session, start_after, comment,
            full_document_before_change, show_expanded_events,
        )

    # -- collections ------------------------------------------------------------------------

    async def list_collections(
        self,
        session: Any = None,
        filter: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> AsyncCommandCursor[MutableMapping[str, Any]]:
        """A cursor of collection information documents."""
        name_only = kwargs.pop("nameOnly", kwargs.pop("name_only", None))
        authorized = kwargs.pop(
            "authorizedCollections", kwargs.pop("authorized_collections", None)
        )
        batch_size = kwargs.pop("batchSize", kwargs.pop("batch_size", None))
        raw_data = kwargs.pop("raw_data", None)
        timeout_mode = kwargs.pop("timeout_mode", None)
        if kwargs:
            raise InvalidArgument(f"list_collections() got unexpected arguments {sorted(kwargs)}")
        op = management.list_collections(
            self._name,
            filter=filter,
            name_only=name_only,
            authorized_collections=authorized,
            batch_size=batch_size,
            comment=comment,
            read_preference=PRIMARY,
            codec_options=self._codec_options,
        )
        op.raw_data = raw_data
        return await open_command_cursor(
            self._client,
            op,
            session,
            self._codec_options,
            timeout_ms=self._timeout_ms,
            timeout_mode=timeout_mode,
            batch_size=batch_size or 0,
            comment=comment,
        )

    async def list_collection_names(
        self,
        session: Any = None,
        filter: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> list[str]:
        """The names of the collections (``nameOnly`` when no filter needs more)."""
        if filter is None or (len(filter) == 1 and "name" in filter):
            kwargs.setdefault("nameOnly", True)
        cursor = await self.list_collections(session, filter, comment, **kwargs)
        return [info["name"] for info in await cursor.to_list()]

    async def create_collection(
        self,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        session: Any = None,
        check_exists: bool | None = True,
        **kwargs: Any,
    ) -> AsyncCollection[_DocumentType]:
        """Create a collection (server option names in ``kwargs``: capped, size, validator,
        timeseries, ...).

        With ``check_exists`` (PyMongo's default) listCollections is asked first and an
        existing collection raises CollectionInvalid (a server that refuses with
        NamespaceExists raises it too); ``check_exists=False`` sends only ``create``.
        """
        collection = self.get_collection(
            name, codec_options, read_preference, write_concern, read_concern
        )
        if check_exists and name in await self.list_collection_names(
            session, filter={"name": name}
        ):
            raise CollectionInvalid(f"collection {name} already exists")
        fields = await self._encrypted_fields(name, kwargs.get("encryptedFields"), session,
                                              ask_server=False)
        if fields is None:
            await self._create(collection, name, kwargs, session, check_exists)
            return collection
        # Client-side encryption spec, "Create Collection Helper": the state collections,
        # the collection with its encryptedFields, then the __safeContent__ index.
        for state in state_collection_names(name, fields):
            await self._create(collection, state, STATE_COLLECTION_OPTIONS, session, False)
        await self._create(collection, name, {**kwargs, "encryptedFields": fields}, session,
                           check_exists)
        await collection.create_index([("__safeContent__", 1)], session=session)
        return collection

    async def _create(self, collection: AsyncCollection[Any], name: str,
                      options: Mapping[str, Any], session: Any, check_exists: bool | None,
                      ) -> None:
        op = management.create_collection(
            Namespace(self._name, name),
            dict(options),
            write_concern=collection._write_concern_for(session),
            codec_options=self._codec_options,
        )
        try:
            await self._client._run(op, session, timeout_ms=self._timeout_ms)
        except OperationFailure as exc:
            if check_exists and exc.code == NAMESPACE_EXISTS:
                raise CollectionInvalid(f"collection {name} already exists") from exc
            raise

    async def _encrypted_fields(self, name: str, given: Any, session: Any, *,
                                ask_server: bool) -> Mapping[str, Any] | None:
        """Client-side encryption spec, "GetEncryptedFields": the ``encryptedFields`` given,
        else the client's ``encrypted_fields_map`` entry, else (``ask_server``, and only on a
        client with automatic encryption, as PyMongo does) the collection's options."""
        if given:
            return cast("Mapping[str, Any]", given)
        mapped = self._client._encrypted_fields_for(f"{self._name}.{name}")
        if mapped is False:
            return None  # no automatic encryption
        if mapped is not None or not ask_server:
            return cast("Mapping[str, Any] | None", mapped)
        cursor = await self.list_collections(session, filter={"name": name})
        for info in await cursor.to_list():
            fields = info.get("options", {}).get("encryptedFields")
            if fields:
                return cast("Mapping[str, Any]", fields)
        return None

    async def dereference(
        self, dbref: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> _DocumentType | None:
        """The document ``dbref`` (asyncmongo's or PyMongo's DBRef) points to, or None.
        A DBRef naming another database raises ValueError; ``kwargs`` go to ``find_one``."""
        if not _is_dbref(dbref):
            raise TypeError(f"cannot dereference a {type(dbref)}")
        if dbref.database is not None and dbref.database != self._name:
            raise ValueError(
                "trying to dereference a DBRef that points to another database "
                f"({dbref.database!r} not {self._name!r})"
            )
        collection: AsyncCollection[_DocumentType] = self[dbref.collection]
        return await collection.find_one(
            {"_id": dbref.id}, session=session, comment=comment, **kwargs
        )

    async def validate_collection(
        self,
        name_or_collection: str | AsyncCollection[Any],
        scandata: bool = False,
        full: bool = False,
        session: Any = None,
        background: bool | None = None,
        comment: Any = None,
    ) -> Mapping[str, Any]:
        """Run ``validate`` on a collection; its reply. CollectionInvalid if the server
        finds the collection invalid."""
        name = getattr(name_or_collection, "name", name_or_collection)
        if not isinstance(name, str):
            raise TypeError("name_or_collection must be a str or an AsyncCollection")
        command: dict[str, Any] = {"validate": name, "scandata": scandata, "full": full}
        if comment is not None:
            command["comment"] = comment
        if background is not None:
            command["background"] = background
        reply = await self.command(command, session=session)
        if not reply.get("valid", False):
            raise CollectionInvalid(f"{name} invalid: {reply!r}")
        return reply

    async def drop_collection(
        self,
        name_or_collection: Any,
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Any = None,
    ) -> Mapping[str, Any]:
        """Drop a collection; one that does not exist is not an error.

        A Queryable Encryption collection (``encrypted_fields``, the client's
        ``encrypted_fields_map``, or its options on a client with automatic encryption) is
        dropped with its two state collections first (the spec's "Drop Collection Helper").
        """
        name = getattr(name_or_collection, "name", name_or_collection)
        if not isinstance(name, str):
            raise InvalidArgument("name_or_collection must be a str or an AsyncCollection")
        fields = await self._encrypted_fields(name, encrypted_fields, session, ask_server=True)
        if fields is not None:
            for state in state_collection_names(name, fields):
                await self._drop(state, session, comment)
        return await self._drop(name, session, comment)

    async def _drop(self, name: str, session: Any, comment: Any) -> Mapping[str, Any]:
        op = management.drop_collection(
            Namespace(self._name, name),
            comment=comment,
            write_concern=self._write_concern_for(session),
            codec_options=self._codec_options,
        )
        result: Mapping[str, Any] = await self._client._run(
            op, session, timeout_ms=self._timeout_ms
        )
        return result

    async def drop(self, session: Any = None, comment: Any = None) -> None:
        """Drop this database."""
        await self._client.drop_database(self._name, session=session, comment=comment)


def _cursor_type(command: Mapping[str, Any]) -> CursorType:
    """A cursor command asking for a tailable cursor (find's ``tailable``/``awaitData``) gets a
    cursor that waits for more at the end, like ``find(cursor_type=...)``."""
    if command.get("tailable") is not True:
        return CursorType.NON_TAILABLE
    return CursorType.TAILABLE_AWAIT if command.get("awaitData") is True else CursorType.TAILABLE


#: The type marker of a DBRef (PyMongo's ``_type_marker`` protocol).
_DBREF_MARKER = 100


def _is_dbref(value: Any) -> bool:
    return isinstance(value, DBRef) or getattr(value, "_type_marker", None) == _DBREF_MARKER
