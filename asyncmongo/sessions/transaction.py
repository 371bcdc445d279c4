"""The commands that end a transaction, and ``async with session.start_transaction():``.

``finish_operation`` builds commitTransaction / abortTransaction as an operation (the
executor pins it to the transaction's mongos or connection, and retries it once);
:class:`TransactionContext` commits on success and aborts on an error.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from types import TracebackType
from typing import Any, Protocol

from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.replies import check_reply, raise_write_concern_error
from asyncmongo.core.sessions.decorate import abort_command, commit_command
from asyncmongo.sessions.options import TransactionOptions

__all__ = ["TransactionContext", "finish_operation"]


def finish_operation(
    name: str,
    options: TransactionOptions,
    recovery_token: Mapping[str, Any] | None,
    *,
    retry: bool,
) -> CommandOperation[Mapping[str, Any]]:
    """commitTransaction (``retry``: a second commit, sent with w: majority) or
    abortTransaction, with the transaction's write concern and recovery token."""
    write_concern = options.write_concern.document if options.write_concern else None
    if name == "commitTransaction":
        document = commit_command(
            write_concern, options.max_commit_time_ms, recovery_token, retry=retry
        )
    else:
        document = abort_command(write_concern, recovery_token)
    # the executor sends it to the pinned mongos or connection (OperationSession)
    return CommandOperation("admin", document, _check_finish, Target.write())


def _check_finish(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """commit/abort replies: ok: 0 raises; a writeConcernError raises WriteConcernError."""
    check_reply(reply)
    concern = reply.get("writeConcernError")
    if isinstance(concern, Mapping):
        raise_write_concern_error(concern, reply)
    return reply


class _Transactional(Protocol):
    @property
    def in_transaction(self) -> bool: ...

    def _abandon_transaction(self) -> None: ...

    async def commit_transaction(self) -> None: ...

    async def abort_transaction(self) -> None: ...


class TransactionContext:
    """``async with session.start_transaction():`` commits on success, aborts on error.

    Awaiting it returns it unchanged, so PyMongo's form ``async with await
    session.start_transaction():`` works too: the transaction was started by
    ``start_transaction`` itself, and awaiting starts nothing more.
    """

    __slots__ = ("_session",)

    def __init__(self, session: _Transactional) -> None:
        self._session = session

    def __await__(self) -> Generator[Any, None, TransactionContext]:
        return self._itself().__await__()

    async def _itself(self) -> TransactionContext:
        return self

    async def __aenter__(self) -> TransactionContext:
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
