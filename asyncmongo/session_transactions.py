"""Transactions on a session: start, commit (retried with w: majority), abort, and
abandoning one without a round trip when cancelled (transactions spec).

``with_transaction``'s retry loop is :mod:`asyncmongo.with_transaction`; the pure state
machine is :mod:`asyncmongo.core.sessions.transaction`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.sessions import ServerSession, TxnAction, TxnState, transition
from asyncmongo.core.sessions.decorate import abort_command, commit_command
from asyncmongo.core.sessions.labels import label_commit_error
from asyncmongo.errors import ConfigurationError, InvalidOperation, MongoError
from asyncmongo.session_options import TransactionOptions
from asyncmongo.session_state import SessionState, session_scope

__all__ = ["TransactionMethods"]


class TransactionMethods(SessionState):
    """The transaction methods of AsyncClientSession."""

    __slots__ = ()

    def start_transaction(
        self,
        read_concern: ReadConcern | None = None,
        write_concern: WriteConcern | None = None,
        read_preference: ReadPreference | None = None,
        max_commit_time_ms: int | None = None,
    ) -> _TransactionContext:
        """Start a transaction; the next operation in this session begins it on the server.

        The result is also an async context manager committing on success and aborting on
        an exception (``async with s.start_transaction(): ...``).
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
        return _TransactionContext(self)

    async def commit_transaction(self) -> None:
        """Commit (retrying once, then with w: majority); empty transactions send nothing."""
        self._check_not_ended()
        previous = self._txn_state
        step = transition(previous, TxnAction.COMMIT)
        self._txn_state = step.state
        if not step.send:
            return
        retry = previous is TxnState.COMMITTED  # a second commit: w: majority (spec)
        await self._finish("commitTransaction", retry=retry)

    async def abort_transaction(self) -> None:
        """Abort; errors from the server are ignored (the transaction is over either way)."""
        self._check_not_ended()
        step = transition(self._txn_state, TxnAction.ABORT)
        self._txn_state = step.state
        if not step.send:
            self._unpin()
            return
        try:
            await self._finish("abortTransaction", retry=False)
        except MongoError:
            pass  # transactions spec: abortTransaction errors are swallowed
        finally:
            self._unpin()

    def _abandon_transaction(self) -> None:
        """Cancelled mid-transaction: no await while being cancelled. The session is aborted
        locally at once (and usable again); a transaction the server already knows is
        aborted by a background task of the client, on a copy of the server session frozen
        at this transaction's number (so the session's next transaction cannot race it), and
        on the pinned connection if there is one (which that task then gives back)."""
        state = self._txn_state
        if not state.in_transaction:
            self._unpin()
            return
        self._txn_state = TxnState.ABORTED
        server_session = self._server_session
        tasks = getattr(self._client, "_tasks", None)
        if state is TxnState.STARTING or server_session is None or tasks is None:
            self._unpin()
            return
        ghost = type(self)(self._client, self._options)
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
        tasks.spawn_unless_closed(ghost._abort_abandoned(), "asyncmongo-abort-abandoned")

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
        options = self._txn_options
        write_concern = options.write_concern.document if options.write_concern else None
        if name == "commitTransaction":
            document = commit_command(
                write_concern, options.max_commit_time_ms, self._recovery_token, retry=retry
            )
        else:
            document = abort_command(write_concern, self._recovery_token)
        target = Target.write()  # the executor pins it (_transaction_target) per attempt
        op: CommandOperation[Mapping[str, Any]] = CommandOperation(
            "admin", document, _check_finish, target
        )
        outer = self._session_deadline
        timeout_ms = self._options.default_timeout_ms
        if outer is None and timeout_ms:
            # CSOT: defaultTimeoutMS is the timeoutMS of commitTransaction/abortTransaction.
            self._session_deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        try:
            with session_scope(self):
                await self._client._run_operation(op)
        except MongoError as exc:
            if name == "commitTransaction":
                label_commit_error(exc)
            raise
        finally:
            self._session_deadline = outer

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


class _TransactionContext:
    """``async with session.start_transaction():`` commits on success, aborts on error."""

    __slots__ = ("_session",)

    def __init__(self, session: TransactionMethods) -> None:
        self._session = session

    async def __aenter__(self) -> _TransactionContext:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session = self._session
        if not session.in_transaction:
            return
        if exc is not None and not isinstance(exc, Exception):
            session._abandon_transaction()  # cancelled: no round trip while unwinding
            return
        if exc_type is None:
            await session.commit_transaction()
        else:
            await session.abort_transaction()


def _check_finish(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """commit/abort replies: ok: 0 raises; a writeConcernError raises WriteConcernError."""
    from asyncmongo.core.operations.replies import check_reply, raise_write_concern_error

    check_reply(reply)
    concern = reply.get("writeConcernError")
    if isinstance(concern, Mapping):
        raise_write_concern_error(concern, reply)
    return reply
