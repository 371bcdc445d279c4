"""AsyncMongoClient: the public entry point, composed of its settings, its event plumbing,
its server session pool and, once connected, its runtime.

``AsyncMongoClient(host_or_uri, port=None, *, event_listeners=(), **options)`` parses its
options at once (bad options fail here, not at first use) and connects lazily: on the first
operation or ``await client.aconnect()``. Connecting starts a
:class:`~asyncmongo.runtime.client_runtime.ClientRuntime`: one monitor task per server, pool
maintenance tasks and (mongodb+srv) the SRV poller, all owned by its TaskSet in a clean
contextvars context. ``await client.close()`` (or leaving ``async with``) cancels and awaits
every one of them and closes every socket.

A client belongs to the event loop it connected on; using it from another loop raises
InvalidOperation instead of failing obscurely inside asyncio, and so does its first operation
without an asyncio loop (under trio, say): asyncmongo runs on asyncio only.

Every operation of the API reaches the server through :meth:`AsyncMongoClient._run`: connect
if needed, check the session, apply the client's ``timeoutMS`` and hand the operation with its
session to the runtime's one :class:`~asyncmongo.runtime.executor.Executor`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from asyncio import _get_running_loop
from collections.abc import AsyncIterator, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from asyncmongo._bulk import run_client_bulk
from asyncmongo._client_events import EVENT_BACKLOG, ClientEvents, EventListener
from asyncmongo._client_settings import (
    check_address_arguments,
    codec_options,
    split_api_options,
)
from asyncmongo._scope import check_session
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.types import Timestamp
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.core.address import Address
from asyncmongo.core.adopt import adopt_driver_info
from asyncmongo.core.auth.scram import ScramCache
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import management
from asyncmongo.core.operations.base import Operation
from asyncmongo.core.operations.client_bulk import ClientBulkOptions
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.cursors import CursorPage, KillCursors
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType
from asyncmongo.core.selection import PRIMARY, ReadPreference, Selection
from asyncmongo.core.uri import ClientOptions
from asyncmongo.core.uri.parse import parse
from asyncmongo.core.uri.support import check_supported
from asyncmongo.core.wire.handshake import DriverInfo, append_driver_info
from asyncmongo.cursor import AsyncCommandCursor, timeout_mode_of
from asyncmongo.database import AsyncDatabase
from asyncmongo.errors import ConfigurationError, InvalidArgument, InvalidOperation
from asyncmongo.monitoring.log_config import configure_once as configure_logging_once
from asyncmongo.monitoring.tracing import make_tracer, tracing_options
from asyncmongo.operations import WriteModel
from asyncmongo.results import ClientBulkWriteResult
from asyncmongo.runtime.client_runtime import ClientRuntime
from asyncmongo.runtime.command_events import next_operation_id
from asyncmongo.runtime.executor import CommandEncrypter, Executor
from asyncmongo.runtime.tasks import TaskSet
from asyncmongo.runtime.timeout import current_deadline
from asyncmongo.runtime.topology import Topology
from asyncmongo.sessions import AsyncClientSession, ServerSessions
from asyncmongo.sessions.implicit import ImplicitSession
from asyncmongo.sessions.options import SessionOptions, TransactionOptions

if TYPE_CHECKING:
    from asyncmongo.change_stream import AsyncChangeStream

__all__ = ["AsyncMongoClient", "EventListener"]

T = TypeVar("T")


_TXN_END = frozenset({"commitTransaction", "abortTransaction"})


def _check_no_override(txn_deadline: float) -> None:
    """CSOT "Validation and Overrides": inside a with_transaction callback whose session
    carries the timeout, an operation's own timeout (a block other than the one around
    with_transaction) is an error."""
    block = current_deadline()
    if block is not None and block != txn_deadline:
        raise InvalidOperation(
            "timeoutMS cannot be overridden (asyncmongo.timeout) for an operation in a "
            "with_transaction callback: the session's timeout applies to the whole call"
        )


class AsyncMongoClient(Generic[_DocumentType]):
    """An asyncio MongoDB client.

    Besides the connection-string options (as keywords, in snake_case or camelCase) and the
    codec options, it takes PyMongo's ``driver=DriverInfo(...)`` (or ``driver_info=``),
    which appends a wrapping library's name, version and platform to the handshake
    metadata as :meth:`append_metadata` does, and ``connect=``, which is accepted and has no
    effect, as in PyMongo's AsyncMongoClient: the client connects on its first operation
    or ``await client.aconnect()``. ``tracing=`` configures OpenTelemetry tracing
    (``enabled``, ``query_text_max_length``, ``tracer_provider``; see the monitoring guide).
    ``auto_encryption_opts=`` (an :class:`~asyncmongo.encryption.AutoEncryptionOpts`)
    encrypts every command and decrypts every reply automatically. Automatic encryption
    requires the authenticated user to have the listCollections privilege action. If a
    client with a limited connection pool size (a non-zero ``maxPoolSize``) is configured
    with AutoEncryptionOpts, a separate internal client is created if
    ``AutoEncryptionOpts.key_vault_client`` is not passed, or if ``bypass_auto_encryption``
    is False; it has the same options as the parent client except ``minPoolSize`` 0 and no
    AutoEncryptionOpts.
    """

    def __init__(
        self,
        host_or_uri: str = "mongodb://localhost:27017",
        port: int | None = None,
        *,
        document_class: type[_DocumentType] | None = None,
        event_listeners: Iterable[EventListener] = (),
        **options: Any,
    ) -> None:
        check_address_arguments(host_or_uri, port, event_listeners)
        if document_class is not None:
            options["document_class"] = document_class
        uri = host_or_uri
        if "://" not in uri:
            uri = f"mongodb://{uri}" + (f":{port}" if port is not None else "")
        configure_logging_once()  # specs/logging: the MONGODB_LOG_* variables
        event_listeners = tuple(event_listeners)
        #: What the internal client of automatic encryption is made from.
        self._given = (uri, event_listeners, dict(options))
        auto_encryption_opts = options.pop("auto_encryption_opts", None)
        api_options, options = split_api_options(options)
        self._options: ClientOptions = parse(uri, **options)
        check_supported(self._options)
        self._codec_options = codec_options(api_options, self._options.uuid_representation)
        self._read_preference = _read_preference(self._options)
        #: OpenTelemetry tracing (asyncmongo.monitoring.otel), None when off.
        self._tracing = make_tracer(tracing_options(api_options.get("tracing")))
        self._events = ClientEvents(
            event_listeners,
            bool(api_options.get("observe_events")),
            self._spawn_listener,
            self._tracing,
        )
        self._server_sessions = ServerSessions(
            self._sessions_description,
            lambda: None if self._runtime is None else self._runtime.topology,
        )
        #: The executor's factory of an operation's implicit session (sessions spec).
        self._implicit_session = ImplicitSession.factory(self._server_sessions)
        self._scram_cache = ScramCache()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runtime: ClientRuntime | None = None
        self._connecting: asyncio.Future[None] | None = None
        self._closed = False
        self._decrypter = _auto_decrypter(auto_encryption_opts, self)  # needs the rest set

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self._runtime else "not connected"
        return f"<AsyncMongoClient {state} {self._options!r}>"

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def options(self) -> ClientOptions:
        """The client's configuration as parsed from the connection string and keywords (read-only).

        A frozen ``ClientOptions`` record, with the spec names in snake_case (``hosts``,
        ``replica_set``, ``max_pool_size``, ``timeout_ms``, ...). For a ``mongodb+srv://`` URI,
        ``hosts`` is empty until the client connects and then holds the resolved seed list.
        PyMongo's ``ClientOptions`` groups the same settings differently (``pool_options``,
        ``server_selection_timeout``, ...).
        """
        return self._options

    @property
    def topology_description(self) -> TopologyDescription:
        """A snapshot of the deployment as the client sees it now."""
        if self._runtime is not None:
            return self._runtime.topology.description
        if not self._options.hosts:  # mongodb+srv before resolution
            return TopologyDescription(TopologyType.UNKNOWN, {}, _placeholder_settings())
        return TopologyDescription.initial(TopologySettings.from_options(self._options))

    def _sessions_description(self) -> TopologyDescription:
        """``topology_description`` for the server session pool (before the client has a
        topology, and for endSessions on close): a connected client's answer in one call."""
        runtime = self._runtime
        if runtime is not None:
            return runtime.topology.description
        return self.topology_description

    async def __aenter__(self) -> AsyncMongoClient[_DocumentType]:
        await self.aconnect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def aconnect(self) -> None:
        """Start monitoring the deployment (idempotent; operations call it implicitly)."""
        while True:
            self._check_loop()
            if self._runtime is not None:
                return
            connecting = self._connecting
            if connecting is None:
                break
            try:
                await asyncio.shield(connecting)  # another task is connecting (SRV lookup)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                # that task was cancelled, not us: connect ourselves
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._connecting = connecting = loop.create_future()
        try:
            runtime = await ClientRuntime.create(
                self._options,
                self._events.listeners,
                self._events.command_events,
                self._implicit_session,
                self._scram_cache,
            )
        except BaseException as exc:
            self._connecting = None
            self._loop = None
            if isinstance(exc, asyncio.CancelledError):
                connecting.cancel()
            else:
                connecting.set_exception(exc)
                connecting.exception()  # retrieved: concurrent waiters re-raise it
            raise
        self._runtime = runtime
        if self._decrypter is not None:
            runtime.executor.decrypt_reply = self._decrypter.decrypt
            runtime.executor.encrypt_command = self._decrypter.encrypt_command
        self._options = runtime.options  # a mongodb+srv URI's resolved seed list
        runtime.open()  # its first events may start listener tasks: runtime is set
        await runtime.guard.arm()  # never closed by the application: closed with the loop
        connecting.set_result(None)

    async def close(self) -> None:
        """End every task and close every socket the client started, and wait for them."""
        if self._closed:
            return
        if self._loop is not None:
            self._check_loop()
        runtime = self._runtime
        if runtime is not None:
            await self._server_sessions.end_all(self._run)  # sessions spec: on close
        self._closed = True
        if runtime is not None:
            await runtime.close()
        if self._decrypter is not None:
            await self._decrypter.close()

    def _internal_client(self) -> AsyncMongoClient[Any]:
        """Client-side encryption spec, "the internal MongoClient": this client's settings
        (URI, keywords, listeners) with ``minPoolSize`` 0 and no auto encryption."""
        uri, listeners, options = self._given
        options = {k: v for k, v in options.items()
                   if k not in ("auto_encryption_opts", "min_pool_size", "minPoolSize",
                                "minpoolsize")}
        return AsyncMongoClient(uri, event_listeners=listeners, minPoolSize=0, **options)

    async def aclose(self) -> None:
        """PyMongo's name for :meth:`close`."""
        await self.close()

    def _check_loop(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # trio, or a plain call outside any event loop
            raise InvalidOperation(
                "asyncmongo runs on asyncio; no asyncio event loop is running"
            ) from None
        if self._closed:
            raise InvalidOperation("the client is closed")
        if self._loop is not None and running is not self._loop:
            raise InvalidOperation(
                "this AsyncMongoClient belongs to the event loop it connected on and cannot be "
                "used from another one; create one client per event loop"
            )

    @property
    def _topology_runtime(self) -> Topology:
        """The running topology (tests and tools; connect first)."""
        if self._runtime is None:
            raise InvalidOperation("the client is not connected yet")
        return self._runtime.topology

    @property
    def _executor(self) -> Executor | None:
        return self._runtime.executor if self._runtime is not None else None

    @property
    def _tasks(self) -> TaskSet | None:
        return self._runtime.tasks if self._runtime is not None else None

    def _spawn_unless_closed(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``coro`` as a task of the client (closed with it), unless it is not running."""
        if not self._spawn(coro, name):
            coro.close()

    def _cursor_dropped(self, kill: KillCursors) -> None:
        """A cursor was dropped while open (its ``__del__``): its killCursors goes to the
        runtime's cursor reaper (nothing to do once the client is closed)."""
        runtime = self._runtime
        if runtime is not None:
            runtime.reaper.drop(kill)

    def _spawn_listener(self, coro: Coroutine[Any, Any, Any]) -> bool:
        return self._spawn(coro, "asyncmongo-event-listener")

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> bool:
        runtime = self._runtime
        return runtime is not None and runtime.tasks.spawn_unless_closed(coro, name) is not None

    def append_metadata(self, driver_info: DriverInfo) -> None:
        """Append a wrapping library's name/version/platform to the handshake metadata
        (handshake spec, "Metadata updates after MongoClient initialization").

        Connections made from now on (pooled and monitoring) send it, joined to what is
        there with "|"; connections already open are left as they are, none is opened or
        closed for it. Appending info equal to info already given (empty string = unset)
        changes nothing.
        """
        driver_info = adopt_driver_info(driver_info)
        if not isinstance(driver_info, DriverInfo):
            raise ConfigurationError(
                f"append_metadata takes a DriverInfo, not {type(driver_info).__name__}"
            )
        merged = append_driver_info(self._options.driver_info, driver_info)
        if merged == self._options.driver_info:
            return
        self._options = dataclasses.replace(self._options, driver_info=merged)
        if self._runtime is not None:
            self._runtime.append_metadata(merged)

    # -- sessions ---------------------------------------------------------------------------

    def start_session(
        self,
        causal_consistency: bool | None = None,
        default_transaction_options: TransactionOptions | None = None,
        snapshot: bool = False,
        default_timeout_ms: int | None = None,
        snapshot_time: Timestamp | None = None,
    ) -> AsyncClientSession:
        """A new explicit session (use ``async with``, or call ``end_session``).

        Its server session is taken from the pool on first use and may have as little as
        a minute left before the server considers it stale: an application that waits more
        than a minute between starting a session and using it risks errors (sessions spec).
        Causally consistent operations are not causally consistent with unacknowledged
        (w:0) writes, which get no operationTime back (causal consistency spec)."""
        if self._closed:
            raise InvalidOperation("the client is closed")
        options = SessionOptions(
            causal_consistency,
            default_transaction_options,
            snapshot,
            default_timeout_ms,
            snapshot_time,
        )
        return AsyncClientSession(self, options)

    # -- running operations -----------------------------------------------------------------

    def _run(
        self,
        op: Operation[T],
        session: Any = None,
        operation_id: int | None = None,
        *,
        timeout_ms: int | None = None,
        deadline: float | None = None,
        max_time: bool = True,
    ) -> Coroutine[Any, Any, T]:
        """Run one operation in ``session`` (None: an implicit one), connecting first if
        needed, within its deadline: ``deadline`` when given (a loop.time(), math.inf for
        timeoutMS without limit: a cursor's), else from ``timeout_ms`` (the caller's scope's
        timeoutMS, None for the client's) or an enclosing ``asyncmongo.timeout()`` block.
        ``max_time``: send the remaining budget as maxTimeMS (CSOT; False for a getMore).

        Not a coroutine function itself: for the usual operation (no explicit session, a
        client connected on the running loop, no tracing) it returns the executor's own
        coroutine, so an operation is one coroutine fewer deep; nothing here raises, every
        check that can fail is ``_run_checked``'s, which runs everything else."""
        runtime = self._runtime
        if (
            session is None
            and runtime is not None
            and self._tracing is None
            and not self._closed
            and self._loop is _get_running_loop()
        ):
            if deadline is None:
                deadline = self._deadline_for(timeout_ms, self._loop)
            return runtime.executor.run(
                op, None, deadline=deadline, operation_id=operation_id, max_time=max_time
            )
        return self._run_checked(
            op,
            session,
            operation_id,
            timeout_ms=timeout_ms,
            deadline=deadline,
            max_time=max_time,
        )

    async def _run_checked(
        self,
        op: Operation[T],
        session: Any,
        operation_id: int | None,
        *,
        timeout_ms: int | None,
        deadline: float | None,
        max_time: bool,
    ) -> T:
        """``_run`` with an explicit session, before the client is connected on this loop,
        or with tracing."""
        if session is not None:
            check_session(session)
            if session._client is not self:
                raise InvalidOperation(
                    "this session was started by another AsyncMongoClient and cannot be used "
                    "with this one"
                )
            txn_deadline = session._session_deadline
            if txn_deadline is not None:
                # CSOT: with_transaction's (or commit/abort's) timeout is the session's
                if op.name not in _TXN_END:
                    _check_no_override(txn_deadline)
                deadline = deadline or txn_deadline
        runtime = self._runtime
        loop = None  # asked for once, and only of a connected client (aconnect explains)
        if runtime is not None and not self._closed:
            loop = asyncio.get_running_loop()
            if self._loop is not loop:
                runtime = None
        if deadline is None:
            deadline = self._deadline_for(timeout_ms, loop)
        if runtime is None or self._closed:
            await self.aconnect()
            runtime = self._runtime
            assert runtime is not None
        if self._tracing is not None:
            operation_id = operation_id or next_operation_id()
            return await self._tracing.run(op, session, operation_id, runtime.executor.run(
                op, session, deadline=deadline, operation_id=operation_id, max_time=max_time))
        return await runtime.executor.run(
            op,
            session,
            deadline=deadline,
            operation_id=operation_id,
            max_time=max_time,
        )

    def _deadline_for(
        self, timeout_ms: int | None, loop: asyncio.AbstractEventLoop | None = None
    ) -> float | None:
        """CSOT: the deadline of an operation starting now (None: timeoutMS is unset,
        math.inf: timeoutMS=0, no limit) from its scope's timeoutMS (None: the client's),
        unless an ``asyncmongo.timeout()`` block sets it: the one place the block's
        ContextVar is read; from here the deadline travels down as an argument."""
        block = current_deadline()
        if block is not None:
            return block
        if timeout_ms is None:
            timeout_ms = self._options.timeout_ms
            if timeout_ms is None:
                return None
        if not timeout_ms:
            return math.inf
        return (loop or asyncio.get_running_loop()).time() + timeout_ms / 1000

    def _deadline(self) -> float | None:
        deadline = self._deadline_for(None)
        return None if deadline is None or deadline == math.inf else deadline

    def _timeout_ms(self) -> int | None:
        return self._options.timeout_ms

    @property
    def timeout_ms(self) -> int | None:
        """The client's timeoutMS (None: unset, 0: no limit)."""
        return self._options.timeout_ms

    @staticmethod
    def _next_operation_id() -> int:
        return next_operation_id()

    def _encrypted_fields_for(self, namespace: str) -> Mapping[str, Any] | bool | None:
        """``auto_encryption_opts``' encrypted_fields_map entry for ``namespace`` (False: no
        automatic encryption)."""
        if self._decrypter is None:
            return False
        return self._decrypter.encrypted_fields_for(namespace)

    async def _run_command(
        self,
        db: str,
        command: Mapping[str, Any],
        *,
        read_preference: ReadPreference = PRIMARY,
        selection: Selection | None = None,
    ) -> dict[str, Any]:
        """Run one command document (tests and tools; the public API is ``db.command``)."""
        await self.aconnect()
        assert self._runtime is not None
        return await self._runtime.executor.run_command(
            db, command, selection or Selection.read(read_preference), deadline=self._deadline()
        )

    async def admin_command(
        self, command: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
    ) -> dict[str, Any]:
        """Run a command on the admin database."""
        return await self._run_command("admin", command, read_preference=read_preference)

    # -- settings ---------------------------------------------------------------------------

    @property
    def codec_options(self) -> CodecOptions:
        """How documents are decoded and encoded (document class, tz awareness, UUID
        representation...).

        Set by the ``document_class``, ``tz_aware``, ``uuidRepresentation``, ... keywords (or the
        URI's ``uuidRepresentation``); every database and collection inherits them unless given
        their own, as in PyMongo.
        """
        return self._codec_options

    @property
    def read_preference(self) -> ReadPreference:
        """From the connection string (every database/collection inherits it)."""
        return self._read_preference

    @property
    def read_concern(self) -> ReadConcern:
        """The read concern from the connection string (``readConcernLevel``), inherited by every
        database and collection; the empty ReadConcern (the server's default) when none is set."""
        return self._options.read_concern

    @property
    def write_concern(self) -> WriteConcern:
        """The write concern from the connection string (``w``, ``wTimeoutMS``, ``journal``),
        inherited by every database and collection; the empty WriteConcern (the server's default)
        when none is set."""
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
        """The addresses of the replica set secondaries currently known (empty if none, or before
        the first check).

        Read from the current topology description, without blocking; a frozenset of
        ``(host, port)`` pairs where PyMongo returns a set.
        """
        return self._servers_of(ServerType.RS_SECONDARY)

    @property
    def arbiters(self) -> frozenset[Address]:
        """The addresses of the replica set arbiters currently known (empty if none, or before the
        first check); read from the current topology description, without blocking."""
        return self._servers_of(ServerType.RS_ARBITER)

    @property
    def is_primary(self) -> bool:
        """True when writes can go to a known primary or standalone now."""
        return bool(self._servers_of(ServerType.RS_PRIMARY, ServerType.STANDALONE))

    @property
    def is_mongos(self) -> bool:
        """True when the client knows a mongos router now (a sharded cluster).

        Read from the current topology description, so it is False until the first server check has
        finished (await an operation or ``aconnect()`` first); PyMongo selects a server (blocking)
        to answer.
        """
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

    # -- databases --------------------------------------------------------------------------

    def __getitem__(self, name: str) -> AsyncDatabase[_DocumentType]:
        return AsyncDatabase(self, name)

    def __getattr__(self, name: str) -> AsyncDatabase[_DocumentType]:
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
        timeout_ms: int | None = None,
    ) -> AsyncDatabase[_DocumentType]:
        """A database; without a name, the connection string's default database."""
        if name is None:
            name = self._options.database
            if name is None:
                raise ConfigurationError("no database name given and none in the URI")
        return AsyncDatabase(
            self,
            name,
            codec_options,
            read_preference,
            write_concern,
            read_concern,
            timeout_ms,
        )

    def get_default_database(
        self, default: str | None = None, **kwargs: Any
    ) -> AsyncDatabase[_DocumentType]:
        """The connection string's database, else ``default``."""
        name = self._options.database or default
        if name is None:
            raise ConfigurationError("no default database name defined or provided")
        return self.get_database(name, **kwargs)

    async def list_databases(
        self, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> AsyncCommandCursor[dict[str, Any]]:
        """A cursor of ``{name, sizeOnDisk, empty}`` documents (listDatabases)."""
        filter = kwargs.pop("filter", None)
        name_only = kwargs.pop("nameOnly", kwargs.pop("name_only", None))
        authorized = kwargs.pop("authorizedDatabases", kwargs.pop("authorized_databases", None))
        # CSOT "Cursors": accepted like any cursor helper's, refused without timeoutMS; the
        # reply holds every database, so the cursor has no getMore left to time
        timeout_mode_of(kwargs.pop("timeout_mode", None), self._options.timeout_ms,
                        tailable=False)
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
        databases: list[Any] = await self._run(op, session)
        page = CursorPage(0, Namespace("admin", "$cmd.listDatabases"), databases)
        return AsyncCommandCursor(self, page, self._codec_options, session=session)

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
        """A change stream of every database's changes (asyncmongo.change_stream;
        PyMongo's signature)."""
        from asyncmongo.change_stream import watch

        return await watch(
            self, "client", pipeline, full_document, resume_after, max_await_time_ms,
            batch_size, collation, start_at_operation_time, session, start_after, comment,
            full_document_before_change, show_expanded_events,
        )

    async def list_database_names(self, session: Any = None, comment: Any = None) -> list[str]:
        """The names of the databases on the deployment (listDatabases with ``nameOnly``).

        ``session`` runs it in an explicit session; ``comment`` is attached to the command. Only the
        databases the user may list are returned when the server restricts them
        (``authorizedDatabases``). Raises OperationFailure if the server refuses the command.
        """
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
        await self._run(op, session)

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
        return await run_client_bulk(
            self, models, options, concern, self._codec_options, session, self._deadline_for(None)
        )

    # -- events -----------------------------------------------------------------------------

    def events(self, backlog: int = EVENT_BACKLOG) -> AsyncIterator[Any]:
        """Every event from this call on, as an async iterator (``async for``; leaving the
        loop, or ``aclose()``, unsubscribes).

        The subscription starts here, not at the first ``__anext__``, so nothing published
        in between is missed. A consumer slower than the driver loses the oldest events
        beyond ``backlog`` rather than growing memory without bound.
        """
        return self._events.subscribe(backlog)


def _read_preference(options: ClientOptions) -> ReadPreference:
    stale = options.max_staleness_seconds
    return ReadPreference.from_options(
        options.read_preference, options.read_preference_tags, stale if stale is not None else -1
    )


class _ReplyDecryption(Protocol):
    """What ``auto_encryption_opts`` gives the client (asyncmongo.encryption's AutoEncrypter,
    named structurally: that package imports this module)."""

    @property
    def encrypt_command(self) -> CommandEncrypter | None: ...

    async def decrypt(self, reply: Any, codec_options: CodecOptions,
                      deadline: float | None = None) -> dict[str, Any]: ...

    def encrypted_fields_for(self, namespace: str) -> Mapping[str, Any] | None: ...

    async def close(self) -> None: ...


def _auto_decrypter(opts: Any, client: AsyncMongoClient[Any]) -> _ReplyDecryption | None:
    """The reply decrypter of ``auto_encryption_opts`` (an AutoEncryptionOpts), or None."""
    if opts is None:
        return None
    decrypter_for = getattr(opts, "decrypter_for", None)
    if decrypter_for is None:
        raise ConfigurationError(
            f"auto_encryption_opts must be an AutoEncryptionOpts, not {type(opts).__name__}"
        )
    decrypter: _ReplyDecryption = decrypter_for(client)
    return decrypter


def _placeholder_settings() -> TopologySettings:
    return TopologySettings(seeds=(("localhost", 27017),))
