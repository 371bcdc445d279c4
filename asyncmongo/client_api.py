"""The public API half of AsyncMongoClient: databases, commands, events, codec options.

:class:`ClientApi` is mixed into ``asyncmongo.client.AsyncMongoClient``, whose own module
keeps the connect/close/topology lifecycle; this one holds what users call on the client
(``client[name]``, ``get_database``, ``list_databases``, ``drop_database``, ``events()``) and
the path every API operation takes: ``_run_operation(op)`` connects if needed, applies the
client's ``timeoutMS`` deadline and hands the operation to the
:class:`~asyncmongo.runtime.operation_executor.OperationExecutor`.

Listeners (``event_listeners=``) may be plain callables or coroutine functions; a coroutine
listener runs as a task owned by the client (closed with it). ``client.events()`` is an async
iterator over every event (command events always; SDAM and CMAP events when the client was
created with ``event_listeners`` or ``observe_events=True``, because pools and monitors decide
at creation whether to build events at all, which keeps the unobserved hot path free).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.types import UuidRepresentation
from asyncmongo.bulk import run_client_bulk
from asyncmongo.core.address import Address
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import management
from asyncmongo.core.operations.base import Operation
from asyncmongo.core.operations.client_bulk import ClientBulkOptions
from asyncmongo.core.operations.cursors import CursorPage
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.core.selection import PRIMARY, ReadPreference
from asyncmongo.cursor import AsyncCommandCursor
from asyncmongo.database import AsyncDatabase
from asyncmongo.errors import (
    ConfigurationError,
    InvalidArgument,
    InvalidOperation,
)
from asyncmongo.operations import WriteModel
from asyncmongo.results import (
    ClientBulkWriteResult,
)
from asyncmongo.runtime.operation_executor import OperationExecutor, next_operation_id
from asyncmongo.session import sessions_bound

if TYPE_CHECKING:
    from asyncmongo.change_stream import AsyncChangeStream
    from asyncmongo.core.sdam.topology_description import TopologyDescription
    from asyncmongo.core.uri import ClientOptions
    from asyncmongo.runtime.executor import Executor
    from asyncmongo.runtime.tasks import TaskSet
    from asyncmongo.runtime.topology import Topology

__all__ = ["ClientApi", "split_api_options"]

T = TypeVar("T")
EventListener = Callable[[Any], Any]

_CODEC_KEYWORDS = {
    "document_class": "document_class",
    "tz_aware": "tz_aware",
    "tzinfo": "tzinfo",
    "uuidrepresentation": "uuid_representation",
    "uuid_representation": "uuid_representation",
    "unicode_decode_error_handler": "unicode_decode_error_handler",
    "datetime_conversion": "datetime_conversion",
}
#: Events kept for an ``events()`` consumer that falls behind (the oldest are dropped).
EVENT_BACKLOG = 10_000


def split_api_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the API's own keywords: codec options and ``observe_events``, the rest for the URI
    parser). The connection string itself cannot set codec options, as in PyMongo, except
    uuidRepresentation (the URI parser validates it; a keyword here overrides it)."""
    api: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in options.items():
        if key.lower() in _CODEC_KEYWORDS or key == "observe_events":
            api[key] = value
        else:
            rest[key] = value
    return api, rest


#: uuidRepresentation spellings (uri-options spec, PyMongo's), folded to lower case.
_UUID_REPRESENTATIONS = {
    "unspecified": UuidRepresentation.UNSPECIFIED,
    "standard": UuidRepresentation.STANDARD,
    "pythonlegacy": UuidRepresentation.PYTHON_LEGACY,
    "javalegacy": UuidRepresentation.JAVA_LEGACY,
    "csharplegacy": UuidRepresentation.CSHARP_LEGACY,
}


def _codec_options(api: Mapping[str, Any], uri_uuid_representation: str) -> CodecOptions:
    """The client's codec options: the keywords, else the URI's uuidRepresentation."""
    kwargs = {
        _CODEC_KEYWORDS[key.lower()]: value for key, value in api.items() if key != "observe_events"
    }
    uuid = kwargs.setdefault("uuid_representation", uri_uuid_representation)
    if isinstance(uuid, str):
        representation = _UUID_REPRESENTATIONS.get(uuid.lower())
        if representation is None:
            raise ConfigurationError(
                f"unknown uuidRepresentation {uuid!r}; expected one of "
                "unspecified, standard, pythonLegacy, javaLegacy, csharpLegacy"
            )
        kwargs["uuid_representation"] = representation
    try:
        return CodecOptions(**kwargs)
    except TypeError as exc:
        raise ConfigurationError(f"invalid codec option: {exc}") from None


@sessions_bound
class ClientApi:
    """Mixed into AsyncMongoClient (see the module docstring)."""

    if TYPE_CHECKING:
        _options: ClientOptions
        _tasks: TaskSet | None

        async def aconnect(self) -> None: ...

        async def close(self) -> None: ...

        @property
        def topology_description(self) -> TopologyDescription: ...

        @property
        def _topology_runtime(self) -> Topology: ...

        _executor: Executor | None

    # -- construction (called from AsyncMongoClient.__init__) -------------------------------

    def _init_api(
        self, api_options: Mapping[str, Any], listeners: Iterable[EventListener]
    ) -> list[EventListener]:
        """Set up codec options, concerns and event plumbing; the listeners to register."""
        self._codec_options = _codec_options(api_options, self._options.uuid_representation)
        self._user_listeners = [self._wrap_listener(listener) for listener in listeners]
        self._event_queues: set[_EventQueue] = set()
        self._operation_executor: OperationExecutor | None = None
        observe = bool(api_options.get("observe_events")) or bool(self._user_listeners)
        return [*self._user_listeners, self._fan_out] if observe else []

    def _wrap_listener(self, listener: EventListener) -> EventListener:
        if not callable(listener):
            raise ConfigurationError(f"an event listener must be callable, not {listener!r}")
        if not inspect.iscoroutinefunction(listener):
            return listener

        def spawn(event: Any) -> None:
            tasks = self._tasks
            if tasks is not None:
                tasks.spawn(listener(event), "asyncmongo-event-listener")

        return spawn

    def _fan_out(self, event: Any) -> None:
        for queue in self._event_queues:
            queue.put(event)

    # -- settings ---------------------------------------------------------------------------

    @property
    def codec_options(self) -> CodecOptions:
        return self._codec_options

    @property
    def read_preference(self) -> ReadPreference:
        """From the connection string (built once: every database/collection inherits it)."""
        preference: ReadPreference | None = self.__dict__.get("_read_preference")
        if preference is None:
            o = self._options
            stale = o.max_staleness_seconds
            preference = ReadPreference.from_options(
                o.read_preference, o.read_preference_tags, stale if stale is not None else -1
            )
            self.__dict__["_read_preference"] = preference
        return preference

    @property
    def read_concern(self) -> ReadConcern:
        return self._options.read_concern

    @property
    def write_concern(self) -> WriteConcern:
        return self._options.write_concern

    # -- the deployment as seen now (PyMongo's properties; never blocking) ------------------

    def _servers_of(self, *types: ServerType) -> frozenset[Address]:
        description: TopologyDescription = self.topology_description
        return frozenset(
            address
            for address, server in description.servers.items()
            if server.server_type in types
        )

    @property
    def nodes(self) -> frozenset[Address]:
        """The addresses of the servers currently known (empty before the first check)."""
        description: TopologyDescription = self.topology_description
        return frozenset(s.address for s in description.known_servers)

    @property
    def primary(self) -> Address | None:
        """The replica set primary's address, if one is known."""
        return next(iter(self._servers_of(ServerType.RS_PRIMARY)), None)

    @property
    def secondaries(self) -> frozenset[Address]:
        return self._servers_of(ServerType.RS_SECONDARY)

    @property
    def arbiters(self) -> frozenset[Address]:
        return self._servers_of(ServerType.RS_ARBITER)

    @property
    def is_primary(self) -> bool:
        """True when writes can go to a known primary or standalone now."""
        return bool(self._servers_of(ServerType.RS_PRIMARY, ServerType.STANDALONE))

    @property
    def is_mongos(self) -> bool:
        return bool(self._servers_of(ServerType.MONGOS))

    @property
    def address(self) -> Address | None:
        """The standalone, primary or (single) mongos this client writes to, if known.

        PyMongo's property selects a server (blocking); this one reads the current
        description and is None until a server is known (await an operation or
        ``aconnect()`` first). With several mongos it is None, as PyMongo raises there.
        """
        writable = self._servers_of(
            ServerType.RS_PRIMARY,
            ServerType.STANDALONE,
            ServerType.MONGOS,
            ServerType.LOAD_BALANCER,
        )
        return next(iter(writable)) if len(writable) == 1 else None

    async def server_info(self, session: Any = None) -> Mapping[str, Any]:
        """The server's buildInfo (version, ...)."""
        return await self["admin"].command("buildinfo", read_preference=PRIMARY, session=session)

    async def aclose(self) -> None:
        """PyMongo's name for :meth:`close`."""
        await self.close()

    # -- databases --------------------------------------------------------------------------

    def __getitem__(self, name: str) -> AsyncDatabase:
        return AsyncDatabase(self, name)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> AsyncDatabase:
        if name.startswith("_"):
            raise AttributeError(
                f"AsyncMongoClient has no attribute {name!r}; use client[{name!r}] for a database"
            )
        return self[name]

    def get_database(
        self,
        name: str | None = None,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> AsyncDatabase:
        """A database; without a name, the connection string's default database."""
        if name is None:
            name = self._options.database
            if name is None:
                raise ConfigurationError("no database name given and none in the URI")
        return AsyncDatabase(
            self,  # type: ignore[arg-type]
            name,
            codec_options,
            read_preference,
            write_concern,
            read_concern,
        )

    def get_default_database(self, default: str | None = None, **kwargs: Any) -> AsyncDatabase:
        """The connection string's database, else ``default``."""
        name = self._options.database or default
        if name is None:
            raise ConfigurationError("no default database name defined or provided")
        return self.get_database(name, **kwargs)

    async def list_databases(
        self, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> AsyncCommandCursor:
        """A cursor of ``{name, sizeOnDisk, empty}`` documents (listDatabases)."""
        filter = kwargs.pop("filter", None)
        name_only = kwargs.pop("nameOnly", kwargs.pop("name_only", None))
        authorized = kwargs.pop("authorizedDatabases", kwargs.pop("authorized_databases", None))
        if kwargs:
            raise InvalidArgument(f"list_databases() got unexpected arguments {sorted(kwargs)}")
        op = management.list_databases(
            filter=filter,
            name_only=name_only,
            authorized_databases=authorized,
            comment=comment,
            read_preference=PRIMARY,
            codec_options=self._codec_options,
        )
        databases = await self._run_operation(op)
        from asyncmongo.core.operations.common import Namespace

        page = CursorPage(0, Namespace("admin", "$cmd.listDatabases"), databases)
        return AsyncCommandCursor(self, page, self._codec_options)

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
    ) -> AsyncChangeStream:
        """A change stream of every database's changes (asyncmongo.change_stream;
        PyMongo's signature)."""
        from asyncmongo.change_stream import watch

        return await watch(
            self, "client", pipeline, full_document, resume_after, max_await_time_ms,
            batch_size, collation, start_at_operation_time, session, start_after, comment,
            full_document_before_change, show_expanded_events,
        )

    async def list_database_names(self, session: Any = None, comment: Any = None) -> list[str]:
        cursor = await self.list_databases(session, comment, nameOnly=True)
        return [info["name"] for info in await cursor.to_list()]

    async def drop_database(
        self, name_or_database: Any, session: Any = None, comment: Any = None
    ) -> None:
        """Drop a database (by name or AsyncDatabase)."""
        name = getattr(name_or_database, "name", name_or_database)
        if not isinstance(name, str):
            raise InvalidArgument("name_or_database must be a str or an AsyncDatabase")
        op = management.drop_database(
            name,
            comment=comment,
            write_concern=self.write_concern,
            codec_options=self._codec_options,
        )
        await self._run_operation(op)

    # -- client bulk write -----------------------------------------------------------------

    async def bulk_write(
        self,
        models: Iterable[WriteModel],
        session: Any = None,
        ordered: bool = True,
        verbose_results: bool = False,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        write_concern: WriteConcern | None = None,
        raw_data: bool | None = None,
    ) -> ClientBulkWriteResult:
        """Writes across collections in ``bulkWrite`` commands (MongoDB 8.0+); every model
        names its ``namespace`` ("db.collection").

        Failures raise ClientBulkWriteException with ``write_errors`` keyed by the model's
        index in ``models``, ``write_concern_errors``, the top-level ``error`` if one stopped
        the write, and ``partial_result`` when at least one write is known to have happened.
        """
        if write_concern is not None and getattr(session, "in_transaction", False):
            # Transactions spec: a transaction's writes take its write concern, never their own.
            raise InvalidOperation("Cannot set write concern after starting a transaction")
        options = ClientBulkOptions(
            ordered, verbose_results, bypass_document_validation, comment, let, raw_data
        )
        concern = write_concern or self.write_concern
        return await run_client_bulk(self, models, options, concern, self._codec_options)

    # -- events -----------------------------------------------------------------------------

    def events(self, backlog: int = EVENT_BACKLOG) -> AsyncIterator[Any]:
        """Every event from this call on, as an async iterator (``async for``; leaving the
        loop, or ``aclose()``, unsubscribes).

        The subscription starts here, not at the first ``__anext__``, so nothing published
        in between is missed. A consumer slower than the driver loses the oldest events
        beyond ``backlog`` rather than growing memory without bound.
        """
        queue = _EventQueue(backlog)
        self._event_queues.add(queue)
        self._update_publisher()
        return self._drain_events(queue)

    async def _drain_events(self, queue: _EventQueue) -> AsyncIterator[Any]:
        try:
            while True:
                yield await queue.get()
        finally:
            self._event_queues.discard(queue)
            self._update_publisher()

    # -- running operations -----------------------------------------------------------------

    def _executor_for_api(self) -> OperationExecutor:
        executor = self._operation_executor
        if executor is None:
            executor = OperationExecutor(self._topology_runtime)
            executor.sessions = self  # implicit sessions, retryWrites/retryReads (issue #10)
            if self._executor is not None:
                executor.clock = self._executor.clock  # one cluster time per client (sessions)
            self._operation_executor = executor
            self._update_publisher()
        return executor

    def _update_publisher(self) -> None:
        executor = self._operation_executor
        if executor is not None:
            observed = bool(self._user_listeners) or bool(self._event_queues)
            executor.set_publisher(self._publish_command if observed else None)

    def _publish_command(self, event: Any) -> None:
        from asyncmongo.monitoring.listeners import LOGGER

        for listener in self._user_listeners:
            try:
                listener(event)
            except Exception:
                LOGGER.exception("event listener %r failed on %r", listener, event)
        self._fan_out(event)

    def _deadline(self) -> float | None:
        timeout_ms = self._options.timeout_ms
        if not timeout_ms:
            return None
        return asyncio.get_running_loop().time() + timeout_ms / 1000

    @staticmethod
    def _next_operation_id() -> int:
        return next_operation_id()

    async def _run_operation(self, op: Operation[T], operation_id: int | None = None) -> T:
        """Run one operation (connecting first if needed) within the client's timeoutMS."""
        await self.aconnect()
        executor = self._operation_executor or self._executor_for_api()
        return await executor.run(op, deadline=self._deadline(), operation_id=operation_id)

    async def _run_operation_at(
        self, op: Operation[T], operation_id: int | None = None
    ) -> tuple[T, Address]:
        """Like :meth:`_run_operation`, also saying which server answered."""
        await self.aconnect()
        executor = self._operation_executor or self._executor_for_api()
        return await executor.run_with_address(
            op, deadline=self._deadline(), operation_id=operation_id
        )

    async def _run_cursor_operation(self, op: Operation[CursorPage]) -> CursorPage:
        """Run a cursor-opening operation; the page remembers the server that owns it."""
        await self.aconnect()
        executor = self._operation_executor or self._executor_for_api()
        page, address = await executor.run_with_address(op, deadline=self._deadline())
        return CursorPage(
            page.cursor_id, page.namespace, page.documents, page.post_batch_resume_token, address
        )


class _EventQueue:
    """One ``events()`` subscriber: a bounded deque and a waiter future."""

    __slots__ = ("_events", "_waiter", "dropped")

    def __init__(self, backlog: int) -> None:
        self._events: deque[Any] = deque(maxlen=backlog)
        self._waiter: asyncio.Future[None] | None = None
        self.dropped = 0

    def put(self, event: Any) -> None:
        if len(self._events) == self._events.maxlen:
            self.dropped += 1
        self._events.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> Any:
        while not self._events:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._events.popleft()
