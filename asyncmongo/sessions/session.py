"""AsyncClientSession: one logical session (lsid), causal consistency, snapshots and the
transaction state it carries.

``async with client.start_session() as s:`` gives a session; pass it as ``session=s`` to any
operation. The API hands it to the executor with each operation; the executor asks it what
:class:`~asyncmongo.runtime.attempt.OperationSession` names (the transaction transition, the
session fields of each attempt, what a reply or an error teaches it) and nothing else. The
pure rules live in :mod:`asyncmongo.core.sessions`.

A server session is taken from the client's pool lazily, on first use, and given back by
:meth:`AsyncClientSession.end_session`.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any, Protocol, TypeVar

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.base import Operation, Target
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.selection.read_preference import Mode
from asyncmongo.core.sessions import (
    ServerSession,
    TxnAction,
    TxnState,
    greater_cluster_time,
    greater_operation_time,
    transition,
)
from asyncmongo.core.sessions.cluster_time import as_timestamp, cluster_time_of
from asyncmongo.core.sessions.decorate import SessionFields, snapshot_time_of
from asyncmongo.core.sessions.labels import (
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_COMMIT_RESULT,
    is_network_error,
    label_commit_error,
)
from asyncmongo.core.sessions.retryability import is_retryable_write_error
from asyncmongo.errors import (
    ConfigurationError,
    ConnectionFailure,
    InvalidOperation,
    MongoError,
    ServerSelectionTimeoutError,
)
from asyncmongo.runtime.attempt import OUTSIDE_TRANSACTION, SessionStep
from asyncmongo.runtime.timeout import current_deadline
from asyncmongo.sessions.options import NO_TRANSACTION_OPTIONS, SessionOptions, TransactionOptions
from asyncmongo.sessions.pool import ServerSessions
from asyncmongo.sessions.transaction import TransactionContext, finish_operation
from asyncmongo.sessions.with_transaction import run_with_transaction

__all__ = ["AsyncClientSession", "SessionOwner"]

T = TypeVar("T")

#: The clock of the server sessions' last use (tests replace it).
monotonic: Callable[[], float] = time.monotonic

_STEP_ENDING_TRANSACTION = SessionStep(in_transaction=True, starting=False)


class SessionOwner(Protocol):
    """What a session needs of the client that started it."""

    @property
    def read_preference(self) -> ReadPreference: ...

    @property
    def read_concern(self) -> ReadConcern: ...

    @property
    def write_concern(self) -> WriteConcern: ...

    @property
    def _server_sessions(self) -> ServerSessions: ...

    def _timeout_ms(self) -> int | None: ...

    def _run(
        self, op: Operation[T], session: Any = None, operation_id: int | None = None
    ) -> Awaitable[T]: ...

    def _spawn_unless_closed(self, coro: Coroutine[Any, Any, None], name: str) -> None: ...

    @property
    def _tracing(self) -> TransactionTracer | None: ...


class TransactionTracer(Protocol):
    """OpenTelemetry's transaction span, for a client that traces (monitoring.otel)."""

    def start_transaction(self) -> Any: ...


class AsyncClientSession:
    """A logical session: causal ordering of its operations, transactions, one lsid."""

    __slots__ = (
        "_client",
        "_cluster_time",
        "_ended",
        "_lsid",
        "_operation_time",
        "_options",
        "_pinned_address",
        "_pinned_connection",
        "_pinned_pool",
        "_recovery_token",
        "_server_session",
        "_session_deadline",
        "_snapshot_time",
        "_txn_options",
        "_txn_span",
        "_txn_state",
    )

    #: Explicit: started by the application (implicit ones are sessions.implicit's).
    _implicit = False

    def __init__(self, client: SessionOwner, options: SessionOptions) -> None:
        self._client = client
        self._options = options
        self._server_session: ServerSession | None = None
        self._lsid: Mapping[str, Any] | None = None
        self._ended = False
        self._cluster_time: Mapping[str, Any] | None = None
        self._operation_time: Timestamp | None = None
        self._snapshot_time: Timestamp | None = options.snapshot_time
        self._txn_state = TxnState.NONE
        self._txn_options = NO_TRANSACTION_OPTIONS
        #: OpenTelemetry: the span of the transaction in progress (a client that traces).
        self._txn_span: Any = None
        self._pinned_address: Any = None
        #: Load-balanced mode: the connection a transaction runs on, and its pool.
        self._pinned_connection: Any = None
        self._pinned_pool: Any = None
        self._recovery_token: Mapping[str, Any] | None = None
        #: CSOT: the ``loop.time()`` every operation in this session must finish by, while
        #: one is set (with_transaction under timeoutMS; commit/abort under the session's
        #: defaultTimeoutMS): the executor caps the operation's deadline with it.
        self._session_deadline: float | None = None

    def __repr__(self) -> str:
        state = "ended" if self._ended else self._txn_state.public_name
        return f"<AsyncClientSession explicit, transaction {state}>"

    # -- public surface --------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The AsyncMongoClient that started this session."""
        return self._client

    @property
    def options(self) -> SessionOptions:
        """The SessionOptions the session was started with (causal consistency, snapshot, default
        transaction options, default timeout); immutable for the session's life."""
        return self._options

    @property
    def session_id(self) -> Mapping[str, Any]:
        """The lsid document ``{"id": UUID}`` (takes a server session on first use; still
        readable after the session ended)."""
        if self._lsid is None:
            self._check_not_ended()
            self._take_server_session()
        assert self._lsid is not None
        return self._lsid

    @property
    def cluster_time(self) -> Mapping[str, Any] | None:
        """The greatest ``$clusterTime`` document this session has seen (from its replies, or given
        to ``advance_cluster_time``), or None before any; sent with the session's commands (sessions
        spec, gossipping the cluster time). Pass it to another session's ``advance_cluster_time`` to
        order that session after this one."""
        return self._cluster_time

    @property
    def operation_time(self) -> Timestamp | None:
        """The ``operationTime`` of the latest operation in this session (a Timestamp), or None
        before any reply carried one; a causally consistent session reads after it
        (``afterClusterTime``). Pass it to another session's ``advance_operation_time`` to order
        that session's reads after this one's writes."""
        return self._operation_time

    @property
    def has_ended(self) -> bool:
        """True once ``end_session()`` has run (or the ``async with`` block was left); an ended
        session raises InvalidOperation when used."""
        return self._ended

    @property
    def in_transaction(self) -> bool:
        """True between ``start_transaction()`` and the commit or abort: operations given this
        session run in the transaction, with its read and write concerns."""
        return self._txn_state.in_transaction

    @property
    def _transaction_state(self) -> str:
        """The unified format's name of the transaction state."""
        return self._txn_state.public_name

    @property
    def _dirty(self) -> bool:
        return self._server_session is not None and self._server_session.dirty

    def advance_cluster_time(self, cluster_time: Mapping[str, Any]) -> None:
        """Causal consistency: order this session after another one's cluster time."""
        if not isinstance(cluster_time, Mapping) or (
            as_timestamp(cluster_time.get("clusterTime")) is None
        ):
            raise InvalidOperation("cluster_time must be a $clusterTime document")
        self._cluster_time = greater_cluster_time(self._cluster_time, cluster_time)

    def advance_operation_time(self, operation_time: Timestamp) -> None:
        """Causal consistency: order this session's reads after ``operation_time``."""
        if as_timestamp(operation_time) is None:
            raise InvalidOperation("operation_time must be a Timestamp")
        self._operation_time = greater_operation_time(self._operation_time, operation_time)

    def get_snapshot_time(self) -> Timestamp | None:
        """A snapshot session's read time (known after its first read)."""
        return self._snapshot_time

    async def __aenter__(self) -> AsyncClientSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None and not isinstance(exc, Exception):
            self._end_cancelled()  # cancelled: no round trip while unwinding
            return
        await self.end_session()

    async def end_session(self) -> None:
        """Abort an open transaction, give the server session back to the pool (idempotent)."""
        if self._ended:
            return
        try:
            if self.in_transaction:
                await self.abort_transaction()
        finally:
            self._release()

    def _end_cancelled(self) -> None:
        """``async with`` left by a cancellation: end without awaiting anything."""
        if not self._ended:
            self._abandon_transaction()
            self._release()

    # -- transactions ----------------------------------------------------------------------

    def start_transaction(
        self,
        read_concern: ReadConcern | None = None,
        write_concern: WriteConcern | None = None,
        read_preference: ReadPreference | None = None,
        max_commit_time_ms: int | None = None,
    ) -> TransactionContext:
        """Start a transaction; the next operation in this session begins it on the server.

        The result is also an async context manager committing on success and aborting on
        an exception (``async with s.start_transaction(): ...``); awaiting it returns it,
        as PyMongo's ``async with await s.start_transaction(): ...`` expects.
        """
        self._check_not_ended()
        if self._options.snapshot:
            raise InvalidOperation("Transactions are not supported in snapshot sessions")
        step = transition(self._txn_state, TxnAction.START)
        options = TransactionOptions(
            read_concern, write_concern, read_preference, max_commit_time_ms
        ).merged(self._options.default_transaction_options or TransactionOptions())
        options = options.merged(self._client_transaction_defaults())
        if options.write_concern is not None and not options.write_concern.acknowledged:
            raise ConfigurationError("transactions do not support unacknowledged write concern")
        self._unpin()
        self._txn_options = options
        self._txn_state = step.state
        self._recovery_token = None
        self._take_server_session().next_txn_number()
        tracing = self._client._tracing
        if tracing is not None:
            self._end_txn_span()  # a previous commit left open for a retry that never came
            self._txn_span = tracing.start_transaction()  # open-telemetry: Transactions
        return TransactionContext(self)

    async def commit_transaction(self) -> None:
        """Commit (retrying once, then with w: majority); empty transactions send nothing."""
        self._check_not_ended()
        previous = self._txn_state
        step = transition(previous, TxnAction.COMMIT)
        self._txn_state = step.state
        retried = False
        try:
            if step.send:
                retry = previous is TxnState.COMMITTED  # a second commit: w: majority (spec)
                await self._finish("commitTransaction", retry=retry)
        except MongoError as exc:
            # A commit that may be retried keeps its transaction span open for the retry.
            retried = exc.has_error_label(UNKNOWN_COMMIT_RESULT)
            raise
        finally:
            if not retried:
                self._end_txn_span()

    async def abort_transaction(self) -> None:
        """Abort; errors from the server are ignored (the transaction is over either way)."""
        self._check_not_ended()
        step = transition(self._txn_state, TxnAction.ABORT)
        self._txn_state = step.state
        if not step.send:
            self._unpin()
            self._end_txn_span()
            return
        try:
            await self._finish("abortTransaction", retry=False)
        except MongoError:
            pass  # transactions spec: abortTransaction errors are swallowed
        finally:
            self._unpin()
            self._end_txn_span()

    async def with_transaction(
        self,
        callback: Callable[[AsyncClientSession], Awaitable[T]],
        read_concern: ReadConcern | None = None,
        write_concern: WriteConcern | None = None,
        read_preference: ReadPreference | None = None,
        max_commit_time_ms: int | None = None,
    ) -> T:
        """Run ``callback(session)`` in a transaction and commit it; the callback's result.

        The callback may run MORE THAN ONCE (convenient transactions API): a
        TransientTransactionError restarts the whole transaction after an exponential
        backoff with jitter, and an UnknownTransactionCommitResult retries the commit, for
        up to 120 seconds, or the session's / client's timeoutMS when set. Make the callback
        idempotent, or at least free of side effects outside the transaction. When the time
        is up the last error is raised inside a timeout error (``__cause__``) carrying its
        error labels. An error without those labels is raised at once, unchanged.

        Cancelled inside the callback, the transaction is abandoned without a round trip
        (the server ends it when the session starts its next one) and the session stays
        usable."""
        options = TransactionOptions(
            read_concern, write_concern, read_preference, max_commit_time_ms
        )
        # an enclosing asyncmongo.timeout() block is the call's own timeoutMS
        return await run_with_transaction(
            self, callback, options, self._timeout_ms(), current_deadline()
        )

    def _timeout_ms(self) -> int | None:
        """timeoutMS for with_transaction: the session's default, else the client's."""
        if self._options.default_timeout_ms is not None:
            return self._options.default_timeout_ms
        return self._client._timeout_ms()

    def _abandon_transaction(self) -> None:
        """Cancelled mid-transaction: no await while being cancelled. The session is aborted
        locally at once (and usable again); a transaction the server already knows is
        aborted by a background task of the client, on a copy of the server session frozen
        at this transaction's number (so the session's next transaction cannot race it), and
        on the pinned connection if there is one (which that task then gives back)."""
        state = self._txn_state
        self._end_txn_span()
        if not state.in_transaction:
            self._unpin()
            return
        self._txn_state = TxnState.ABORTED
        server_session = self._server_session
        if state is TxnState.STARTING or server_session is None:
            self._unpin()
            return
        ghost = AsyncClientSession(self._client, self._options)
        ghost._server_session = ServerSession(
            server_session.session_id, server_session.last_use, server_session.txn_number
        )
        ghost._lsid = server_session.lsid
        ghost._txn_state = TxnState.IN_PROGRESS
        ghost._txn_options = self._txn_options
        ghost._recovery_token = self._recovery_token
        ghost._cluster_time = self._cluster_time
        ghost._pinned_address = self._pinned_address
        ghost._pinned_connection, self._pinned_connection = self._pinned_connection, None
        ghost._pinned_pool, self._pinned_pool = self._pinned_pool, None
        self._pinned_address = None
        self._client._spawn_unless_closed(ghost._abort_abandoned(), "asyncmongo-abort-abandoned")

    def _end_txn_span(self) -> None:
        """open-telemetry: the transaction span ends with its commit or abort."""
        span, self._txn_span = self._txn_span, None
        if span is not None:
            span.end()

    async def _abort_abandoned(self) -> None:
        """Background: abort the abandoned transaction; the copied server session is never
        pooled (the real one still belongs to the session it was copied from)."""
        try:
            await self.abort_transaction()
        finally:
            self._unpin()
            self._server_session = None
            self._ended = True

    async def _finish(self, name: str, *, retry: bool) -> None:
        """Send commitTransaction/abortTransaction (the executor retries it once)."""
        op = finish_operation(name, self._txn_options, self._recovery_token, retry=retry)
        outer = self._session_deadline
        if outer is None:
            self._session_deadline = self._finish_deadline()
        try:
            await self._client._run(op, self)
        except MongoError as exc:
            if name == "commitTransaction":
                label_commit_error(exc)
            raise
        finally:
            self._session_deadline = outer

    def _finish_deadline(self) -> float | None:
        """CSOT "Sessions": the deadline of a commitTransaction/abortTransaction (and so of
        end_session's abort) outside with_transaction: the operation's own timeout (an
        enclosing ``asyncmongo.timeout()`` block), else the session's defaultTimeoutMS (0: no
        limit, even under the client's timeoutMS); None: the client's timeoutMS applies."""
        block = current_deadline()
        if block is not None:
            return block
        timeout_ms = self._options.default_timeout_ms
        if timeout_ms is None:
            return None
        if timeout_ms == 0:
            return math.inf
        return asyncio.get_running_loop().time() + timeout_ms / 1000

    def _client_transaction_defaults(self) -> TransactionOptions:
        client = self._client
        read_concern = client.read_concern
        write_concern = client.write_concern
        return TransactionOptions(
            None if read_concern.is_server_default else read_concern,
            None if write_concern.is_server_default else write_concern,
            client.read_preference,
            None,
        )

    # -- what the executor asks (runtime.attempt.OperationSession) -------------------------

    def _prepare(self, name: str, *, acknowledged: bool) -> SessionStep:
        """Called once per operation before the first attempt: checks, the transaction
        transition and (for the first command of a transaction) startTransaction."""
        self._check_not_ended()
        if name in ("commitTransaction", "abortTransaction"):
            return _STEP_ENDING_TRANSACTION
        if self._txn_state.in_transaction:
            # Transactions spec: an operation's own write concern is ignored in a
            # transaction (even w:0): it runs acknowledged, the commit carries the concern.
            starting = self._txn_state is TxnState.STARTING
            self._txn_state = transition(self._txn_state, TxnAction.OPERATE).state
            return SessionStep(in_transaction=True, starting=starting)
        if not acknowledged:
            raise ConfigurationError(
                "explicit sessions are incompatible with unacknowledged writes"
            )
        if self._txn_state is not TxnState.NONE:
            self._txn_state = transition(self._txn_state, TxnAction.OPERATE).state
            self._unpin()
        return OUTSIDE_TRANSACTION

    def _transaction_target(self, target: Target, *, own_preference: bool = False) -> Target:
        """In a transaction: the transaction's read preference (unless the operation's own
        was given explicitly: a generic command), and the pinned mongos."""
        if self._pinned_address is not None:
            return Target(target.selection, self._pinned_address)
        preference = None if own_preference else self._txn_options.read_preference
        if preference is not None and target.address is None:
            if target.selection.read_preference is not preference:
                selection = replace(target.selection, read_preference=preference)
                return replace(target, selection=selection)
        return target

    def _check_read_preference(self, target: Target, *, own_preference: bool = False) -> None:
        """Transactions spec: a read in a transaction must go to the primary."""
        selection = target.selection
        preference = None if own_preference else self._txn_options.read_preference
        effective = preference if preference is not None else selection.read_preference
        if effective.mode is not Mode.PRIMARY and selection.operation.name == "READ":
            raise InvalidOperation(
                f"read preference in a transaction must be primary, not: {effective.mode.name}"
            )

    def _fields(
        self,
        step: SessionStep,
        txn_number: int | None,
        client_cluster_time: Mapping[str, Any] | None,
        *,
        generic: bool = False,
    ) -> SessionFields:
        """The session fields of one attempt (causal consistency: a generic runCommand gets
        no afterClusterTime outside a transaction)."""
        server_session = self._take_server_session()
        server_session.last_use = monotonic()
        cluster_time = client_cluster_time
        if self._cluster_time is not None:  # gossip: the greater of the client's and ours
            cluster_time = greater_cluster_time(client_cluster_time, self._cluster_time)
        causal = self._options.causally_consistent
        if generic and not step.in_transaction:
            causal = False
        after = self._operation_time if causal else None
        if step.in_transaction:
            concern = self._txn_options.read_concern
            return SessionFields(
                lsid=server_session.lsid,
                txn_number=server_session.txn_number,
                in_transaction=True,
                starting_transaction=step.starting,
                transaction_read_concern=concern.document if concern else None,
                after_cluster_time=after,
                cluster_time=cluster_time,
            )
        # positional: cheaper than keywords, on every operation
        return SessionFields(
            server_session.lsid,  # lsid
            txn_number,  # txn_number
            False,  # in_transaction
            False,  # starting_transaction
            None,  # transaction_read_concern
            after,  # after_cluster_time
            self._options.snapshot,  # snapshot
            self._snapshot_time,  # snapshot_time
            cluster_time,  # cluster_time
        )

    def _implicit_lsid(self) -> Mapping[str, Any]:
        raise AssertionError("an explicit session's fields are _fields'")

    def _next_txn_number(self) -> int:
        """A new transaction number for one retryable write (its retry reuses it)."""
        return self._take_server_session().next_txn_number()

    def _observe(self, reply: Mapping[str, Any], address: Any, sharded: bool) -> None:
        """A reply arrived: gossip, operationTime, the snapshot time, the recovery token,
        and pin a transaction to the mongos that started it."""
        if "$clusterTime" in reply:  # a standalone never sends one
            cluster_time = cluster_time_of(reply)
            if cluster_time is not None:
                self._cluster_time = greater_cluster_time(self._cluster_time, cluster_time)
        operation_time = reply.get("operationTime")
        if operation_time is not None:
            self._operation_time = greater_operation_time(self._operation_time, operation_time)
        if self._options.snapshot and self._snapshot_time is None:
            self._snapshot_time = snapshot_time_of(reply)
        if self._txn_state.in_transaction:
            token = reply.get("recoveryToken")
            if isinstance(token, Mapping):
                self._recovery_token = token
            if sharded and self._pinned_address is None:
                self._pinned_address = address

    def _on_error(self, exc: BaseException, step: SessionStep, name: str) -> None:
        """An attempt failed: a network error dirties the server session; in a transaction
        network and selection errors are transient, and transient errors unpin."""
        if isinstance(exc, ConnectionFailure) and not isinstance(exc, ServerSelectionTimeoutError):
            if is_network_error(exc) and self._server_session is not None:
                self._server_session.mark_dirty()
        if not step.in_transaction or not isinstance(exc, MongoError):
            return
        if name != "commitTransaction" and (
            is_network_error(exc) or isinstance(exc, ServerSelectionTimeoutError)
        ):
            exc._add_error_label(TRANSIENT_TRANSACTION_ERROR)
        if exc.has_error_label(TRANSIENT_TRANSACTION_ERROR) or (
            name == "commitTransaction"
            and (
                exc.has_error_label(UNKNOWN_COMMIT_RESULT)
                or is_retryable_write_error(exc)
                or is_network_error(exc)
            )
        ):
            self._unpin()  # a commit is retried on any mongos, with the recovery token

    def _pin_connection(self, conn: Any, pool: Any, address: Any) -> None:
        """Load balancers spec: a transaction keeps its first connection until it ends."""
        self._pinned_connection = conn
        self._pinned_pool = pool
        self._pinned_address = address

    def _drop_pinned_connection(self) -> None:
        """The pinned connection broke and its pool discarded it."""
        self._pinned_connection = self._pinned_pool = None

    def _release(self) -> None:
        """End: the server session goes back to the client's pool."""
        if self._ended:
            return
        self._ended = True
        self._end_txn_span()
        if self._pinned_address is not None or self._pinned_connection is not None:
            self._unpin()
        server_session, self._server_session = self._server_session, None
        if server_session is not None:
            self._client._server_sessions.release(server_session)

    # -- internals -------------------------------------------------------------------------

    def _check_not_ended(self) -> None:
        if self._ended:
            raise InvalidOperation("Cannot use ended session")

    def _take_server_session(self) -> ServerSession:
        if self._server_session is None:
            self._server_session = self._client._server_sessions.acquire()
            self._lsid = self._server_session.lsid
        return self._server_session

    def _unpin(self) -> None:
        """Forget the pinned mongos; give a pinned connection back to its pool."""
        self._pinned_address = None
        conn, pool = self._pinned_connection, self._pinned_pool
        self._pinned_connection = self._pinned_pool = None
        if conn is not None and pool is not None:
            pool.check_in(conn)
