"""AsyncClientSession: one logical session (lsid), causal consistency, snapshots and the
transaction state it carries.

``async with client.start_session() as s:`` gives a session; pass it as ``session=s`` to any
operation. The class is assembled from one module per job: :mod:`asyncmongo.session_state`
(the fields and their bookkeeping), :mod:`asyncmongo.session_hooks` (what the executor asks
of a session and tells it), :mod:`asyncmongo.session_transactions` (start / commit / abort)
and :mod:`asyncmongo.with_transaction` (the convenient API's retry loop); this module adds
the public surface. The pure rules live in :mod:`asyncmongo.core.sessions`.

A server session is taken from the client's pool lazily, on first use, and given back by
:meth:`AsyncClientSession.end_session`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.sessions import greater_cluster_time, greater_operation_time
from asyncmongo.errors import InvalidOperation
from asyncmongo.session_hooks import ExecutorHooks, SessionStep
from asyncmongo.session_options import SessionOptions, TransactionOptions
from asyncmongo.session_state import session_scope
from asyncmongo.session_transactions import TransactionMethods
from asyncmongo.with_transaction import run_with_transaction

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient

__all__ = ["AsyncClientSession", "SessionStep", "session_scope"]

T = TypeVar("T")


class AsyncClientSession(TransactionMethods, ExecutorHooks):
    """A logical session: causal ordering of its operations, transactions, one lsid."""

    __slots__ = ()

    def __repr__(self) -> str:
        state = "ended" if self._ended else self._txn_state.public_name
        kind = "implicit" if self._implicit else "explicit"
        return f"<AsyncClientSession {kind}, transaction {state}>"

    # -- public surface --------------------------------------------------------------------

    @property
    def client(self) -> AsyncMongoClient:
        return self._client

    @property
    def options(self) -> SessionOptions:
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
        return self._cluster_time

    @property
    def operation_time(self) -> Timestamp | None:
        return self._operation_time

    @property
    def has_ended(self) -> bool:
        return self._ended

    @property
    def _transaction_state(self) -> str:
        """The unified format's name of the transaction state."""
        return self._txn_state.public_name

    @property
    def _dirty(self) -> bool:
        return self._server_session is not None and self._server_session.dirty

    def advance_cluster_time(self, cluster_time: Mapping[str, Any]) -> None:
        """Causal consistency: order this session after another one's cluster time."""
        if not isinstance(cluster_time, Mapping) or not isinstance(
            cluster_time.get("clusterTime"), Timestamp
        ):
            raise InvalidOperation("cluster_time must be a $clusterTime document")
        self._cluster_time = greater_cluster_time(self._cluster_time, cluster_time)

    def advance_operation_time(self, operation_time: Timestamp) -> None:
        """Causal consistency: order this session's reads after ``operation_time``."""
        if not isinstance(operation_time, Timestamp):
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
        return await run_with_transaction(self, callback, options, self._timeout_ms())

    def _timeout_ms(self) -> int | None:
        """timeoutMS for with_transaction: the session's default, else the client's."""
        if self._options.default_timeout_ms is not None:
            return self._options.default_timeout_ms
        return self._client.options.timeout_ms
