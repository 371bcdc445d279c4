"""One operation as the executor runs it: the user's operation plus its session and retry state.

:class:`OperationSession` is what the executor asks of a session (implemented by
``asyncmongo.sessions.AsyncClientSession``; the runtime never imports it).
:class:`SessionOperation` wraps an operation object for the executor's retry loop. Its
``build`` adds what the session, the transaction and retryable writes put in a command
(``asyncmongo.core.sessions.decorate``) and the client's ``$clusterTime``; its ``parse``
first lets the client and the session learn from the reply (cluster time, operationTime,
snapshot time, recovery token) and turns a retryable write concern error into an exception
while a retry is still possible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.address import Address
from asyncmongo.core.backpressure import is_retryable_overload_error
from asyncmongo.core.operations.base import Command, ConnectionInfo, Operation, Target
from asyncmongo.core.selection.suitability import Operation as SelectionKind
from asyncmongo.core.sessions.cluster_time import cluster_time_of, greater_cluster_time
from asyncmongo.core.sessions.decorate import (
    COMMIT_RETRY_WTIMEOUT_MS,
    PlainSessionFields,
    SessionFields,
    decorate,
    decorate_plain,
)
from asyncmongo.core.sessions.retryability import (
    RETRYABLE_READ_COMMANDS,
    is_retryable_read_error,
    is_retryable_write_error,
    label_retryable_write_error,
    write_concern_error_of,
)
from asyncmongo.errors import ConfigurationError, OperationFailure, WriteConcernError

__all__ = [
    "OUTSIDE_TRANSACTION",
    "ClusterTimeKeeper",
    "OperationSession",
    "SessionOperation",
    "SessionStep",
    "is_retryable_write_operation",
    "may_retry_overload",
]

T = TypeVar("T")

#: Sessions spec: $clusterTime is gossiped to servers of wire version 6 (3.6) and later.
CLUSTER_TIME_WIRE_VERSION = 6
_TXN_END = frozenset({"commitTransaction", "abortTransaction"})
#: A cursor's commands: reads for the overload retry policy, whatever their target says.
_CURSOR_OPS = frozenset({"getMore", "killCursors"})
#: The commands that may be retryable writes (``is_retryable_write_operation`` decides).
_WRITE_COMMANDS = frozenset(
    {"insert", "update", "delete", "findAndModify", "bulkWrite"} | _TXN_END
)
#: IllegalOperation: what a server without retryable writes answers to txnNumber.
ILLEGAL_OPERATION = 20


class AttemptConnection(ConnectionInfo, Protocol):
    """What an attempt reads of its connection beyond what the operation does (a runtime
    Connection is one): what the server's handshake said it supports."""

    @property
    def supports_sessions(self) -> bool: ...

    @property
    def supports_retryable_writes(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class SessionStep:
    """What a session decided for one operation before its first attempt."""

    in_transaction: bool
    starting: bool


#: The step of every operation outside a transaction (an implicit session's, always).
OUTSIDE_TRANSACTION: Final = SessionStep(in_transaction=False, starting=False)


class OperationSession(Protocol):
    """What the executor needs of a session (``asyncmongo.sessions.AsyncClientSession``)."""

    _implicit: bool
    _session_deadline: float | None

    def _prepare(self, name: str, *, acknowledged: bool) -> SessionStep: ...

    def _transaction_target(self, target: Target, *, own_preference: bool = False) -> Target: ...

    def _check_read_preference(self, target: Target, *, own_preference: bool = False) -> None: ...

    def _fields(
        self,
        step: SessionStep,
        txn_number: int | None,
        client_cluster_time: Mapping[str, Any] | None,
        *,
        generic: bool = False,
    ) -> SessionFields: ...

    def _implicit_lsid(self) -> Mapping[str, Any]:
        """An implicit session's lsid for the next attempt (its last use stamped); all of
        ``_fields`` that one needs (``decorate_plain`` does the rest)."""
        ...

    def _next_txn_number(self) -> int: ...

    def _observe(self, reply: Mapping[str, Any], address: Any, sharded: bool) -> None: ...

    def _on_error(self, exc: BaseException, step: SessionStep, name: str) -> None: ...

    def _release(self) -> None: ...

    _pinned_connection: Any

    def _pin_connection(self, conn: Any, pool: Any, address: Any) -> None: ...

    def _drop_pinned_connection(self) -> None: ...


def is_retryable_write_operation(op: Any) -> bool:
    """Retryable writes spec, "Supported Write Operations": insert, single-document update
    and delete, findAndModify (bulk batches: when none of their statements is multi), and
    client bulkWrite when none of its (namespace, statement) models is multi."""
    name = op.name
    if name not in _WRITE_COMMANDS:
        return False  # a read or any other command: the one test most operations take
    if name == "insert":  # an insert statement is never multi
        return getattr(op, "statements", None) is not None
    if name == "findAndModify" or name in _TXN_END:
        return True
    if name == "bulkWrite":
        models = getattr(op, "models", ())
        return not any(statement.multi for _, statement in models[getattr(op, "start", 0):])
    if name not in ("update", "delete"):
        return False
    statements = getattr(op, "statements", None)
    if statements is None:
        return False
    start = getattr(op, "start", 0)
    if len(statements) - start == 1:  # update_one, delete_one, ...: no generator to run
        return not getattr(statements[start], "multi", False)
    return not any(getattr(s, "multi", False) for s in statements[start:])


def _acknowledged(op: Any) -> bool:
    """Whether the operation's write concern is acknowledged (any other operation is)."""
    return getattr(op, "acknowledged", True) and not getattr(op, "unacknowledged", False)


def may_retry_overload(op: Any, retry_reads: bool, retry_writes: bool) -> bool:
    """Client backpressure, "Overload retry policy" 2.4: a write when retryWrites is on, a
    read when retryReads is on, a generic runCommand only when both are; commit and abort
    always (transactions spec: they are retried whatever retryWrites says)."""
    if retry_reads and retry_writes:
        return True  # the defaults: every kind of command may be retried, no need to look
    name = op.name
    if name in _TXN_END:
        return True
    if getattr(op, "generic", False):
        return retry_reads and retry_writes
    if name in _CURSOR_OPS:
        return retry_reads
    target: Target = op.target
    if target.write_stage or target.selection.operation is SelectionKind.WRITE:
        return retry_writes
    return retry_reads


def is_retryable_read_operation(op: Any) -> bool:
    """Retryable reads spec: the supported reads, not a $out/$merge aggregate, not getMore."""
    target: Target = op.target
    return op.name in RETRYABLE_READ_COMMANDS and not target.write_stage and target.address is None


class SessionOperation(Generic[T]):
    """An operation in its session, one attempt after the other.

    No ``__slots__``: what an attempt learns (its number, server, connection limits, ...)
    starts as the class defaults below, so constructing one per operation stores only what
    the operation and its session decide."""

    #: Attempts made so far, the server of the last one and whether it is a mongos.
    attempt: int = 0
    address: Address | None = None
    sharded: bool = False
    #: What the last attempt's connection said of its server.
    max_wire_version: int | None = None
    supports_retryable_writes: bool = True
    #: A retryable write's txnNumber, the same on every attempt.
    txn_number: int | None = None
    #: Load-balanced mode: a cursor-opening command's connection, held until the reply
    #: says whether a cursor stays open on it.
    held: Any = None
    #: Transactions spec: a retried commit uses w: majority once an attempt failed with
    #: an error other than a retryable overload error (that one did no work).
    commit_majority: bool = False
    #: What the session decided before the first attempt (None: no session).
    step: SessionStep | None = None
    in_transaction: bool = False
    #: A generic command in an explicit session (set in ``__init__`` only there).
    generic: bool = False

    def __init__(
        self,
        op: Operation[T],
        session: OperationSession | None,
        clock: ClusterTimeKeeper,
        *,
        retry_writes: bool,
        retry_reads: bool,
        timed: bool = False,
        max_time: bool = False,
    ) -> None:
        self.op = op
        self.name: str = op.name
        self.session = session
        self.clock = clock
        #: CSOT: timeoutMS is set (retry until the deadline, deprecated timeouts ignored),
        #: and the command carries the remaining budget as maxTimeMS.
        self.timed = timed
        self.max_time = max_time
        #: The operation's target as this attempt sees it (``retarget`` before a retry).
        self.target: Target = op.target
        if session is None:
            # Without a session there is no transaction and no retryable write (it needs a
            # txnNumber), so the write checks below have nothing to decide: skipped, they
            # cost nothing on every sessionless operation.
            self.retry_writes = False
            self.retry_reads = retry_reads
            return
        name = self.name
        if session._implicit:
            # never in a transaction (sessions spec): nothing to prepare, and only a write
            # (a commit or abort run as a generic command included) asks more
            self.step = OUTSIDE_TRANSACTION
            self.retry_reads = retry_reads
            ending = name in _TXN_END
            if (
                (retry_writes or ending)
                and name in _WRITE_COMMANDS
                and is_retryable_write_operation(op)
                and _acknowledged(op)
            ):
                self.retry_writes = True
                if not ending:
                    self.txn_number = session._next_txn_number()
            else:
                self.retry_writes = False
            return
        # A generic command (``db.command``): the user's document gets no afterClusterTime,
        # and in a transaction an explicitly given read preference is checked rather than
        # replaced by the transaction's (what only an explicit session's fields ask).
        self.generic = getattr(op, "generic", False)
        acknowledged = _acknowledged(op)
        step = self.step = session._prepare(name, acknowledged=acknowledged)
        if not step.in_transaction and name not in _TXN_END:
            # the usual: outside a transaction, retryWrites and retryReads as configured
            self.retry_reads = retry_reads
            if retry_writes and acknowledged and is_retryable_write_operation(op):
                self.retry_writes = True
                self.txn_number = session._next_txn_number()
            else:
                self.retry_writes = False
            return
        in_transaction = self.in_transaction = step.in_transaction
        ending = name in _TXN_END
        if ending:
            # Transactions spec: commit/abort go to the pinned mongos
            self.target = session._transaction_target(op.target)
        else:
            own_preference: bool = getattr(op, "own_read_preference", False)
            target = session._transaction_target(op.target, own_preference=own_preference)
            session._check_read_preference(target, own_preference=own_preference)
            self.target = target
        # Transactions spec: commit and abort are retried once whatever retryWrites says; a
        # write in a transaction is not retried on its own (acknowledged there even if w:0).
        self.retry_writes = (
            ending and (acknowledged or in_transaction) and is_retryable_write_operation(op)
        )
        #: retryReads, outside a transaction; whether the operation is a retryable read at
        #: all is asked only once an attempt failed (``may_retry``), not on every operation.
        self.retry_reads = retry_reads and not in_transaction

    def retarget(self) -> None:
        """Before a retry: a failed commit or abort unpinned its session, so the retry
        selects any mongos (transactions spec)."""
        if self.session is not None and self.name in _TXN_END:
            self.target = self.session._transaction_target(self.op.target)

    # -- the Operation interface ----------------------------------------------------------

    @property
    def codec_options(self) -> CodecOptions:
        return self.op.codec_options

    def build(self, conn: AttemptConnection) -> Command:
        """The command to send on ``conn``, decorated (see ``build_document``)."""
        command, document = self.build_document(conn)
        return Command(command.database, document, command.sequences, command.unacknowledged)

    def build_document(self, conn: AttemptConnection) -> tuple[Command, dict[str, Any]]:
        """(the operation's command, its document with the session's fields and the
        client's ``$clusterTime``): the executor sends the document with the command's
        database, sequences and w:0 flag, so no second Command is built per attempt."""
        command = self.op.build(conn)
        self.max_wire_version = max_wire_version = conn.max_wire_version
        self.supports_retryable_writes = conn.supports_retryable_writes
        clock_time = self.clock.cluster_time if max_wire_version >= 6 else None
        session = self.session
        fields = None
        if session is not None:
            step = self.step
            assert step is not None
            unacknowledged = command.unacknowledged
            if unacknowledged and step.in_transaction:
                command = Command(command.database, command.document, command.sequences, False)
                unacknowledged = False
            if not conn.supports_sessions:
                if not session._implicit:
                    raise ConfigurationError(
                        "Sessions are not supported by this MongoDB deployment"
                    )
            elif not (unacknowledged and session._implicit):
                txn = self.txn_number if self.supports_retryable_writes else None
                if session._implicit and not self.commit_majority:
                    document = decorate_plain(
                        command.document, session._implicit_lsid(), txn, clock_time
                    )
                    return command, document
                fields = session._fields(step, txn, clock_time, generic=self.generic)
        if fields is None:
            fields = (
                _NO_SESSION if clock_time is None else PlainSessionFields(None, None, clock_time)
            )
        document = decorate(command.document, fields)
        if self.commit_majority and self.name == "commitTransaction":
            document = _majority(document)
        return command, document

    def parse(self, reply: Mapping[str, Any]) -> T:
        self.clock.advance(reply)
        session = self.session
        if session is not None and not session._implicit:  # an implicit one keeps nothing
            session._observe(reply, self.address, self.sharded)
        if (
            self.attempt == 1
            and self.retry_writes
            and self.supports_retryable_writes
            and "writeConcernError" in reply
        ):
            concern = write_concern_error_of(reply)
            if concern is not None:
                error = WriteConcernError(
                    str(concern.get("errmsg", "write concern failed")),
                    concern.get("code"),
                    dict(reply),
                    list(reply.get("errorLabels") or ()) + list(concern.get("errorLabels") or ()),
                )
                label_retryable_write_error(error, self.max_wire_version)
                if is_retryable_write_error(error):
                    raise error
        return self.op.parse(reply)

    # -- the retry decision ---------------------------------------------------------------

    def may_retry(self, exc: BaseException) -> bool:
        """After an attempt failed with ``exc``: do the retryable reads/writes rules allow a
        retry? (How many retries is the executor's count.)"""
        if self.retry_writes:
            if not self.supports_retryable_writes and self.max_wire_version is not None:
                return False
            return is_retryable_write_error(exc)
        if self.retry_reads and is_retryable_read_operation(self.op):
            return is_retryable_read_error(exc)
        return False

    def replacement(self, exc: BaseException) -> BaseException | None:
        """Retryable writes spec: a server that rejects txnNumber (code 20, "Transaction
        numbers ...") is answered with an error telling the user to turn retryWrites off."""
        if (
            self.retry_writes
            and isinstance(exc, OperationFailure)
            and exc.code == ILLEGAL_OPERATION
            and str(exc).startswith("Transaction numbers")
        ):
            return OperationFailure(
                "This MongoDB deployment does not support retryable writes. Please add "
                "retryWrites=false to your connection string.",
                exc.code,
                exc.details,
            )
        return None

    def failed(self, exc: BaseException) -> None:
        """Label a retryable write's error; tell the session (dirty server session,
        transaction labels, unpinning)."""
        if self.retry_writes and (self.supports_retryable_writes or self.max_wire_version is None):
            label_retryable_write_error(exc, self.max_wire_version)
        if not is_retryable_overload_error(exc):
            self.commit_majority = True
        if self.session is not None and self.step is not None:
            self.session._on_error(exc, self.step, self.op.name)


#: The fields of a command without a session or cluster time (a standalone's hello, ...).
_NO_SESSION = PlainSessionFields(None, None, None)


def _majority(document: dict[str, Any]) -> dict[str, Any]:
    """Transactions spec: a retried commit uses w: majority (wtimeout 10 s by default)."""
    concern = dict(document.get("writeConcern") or {})
    concern["w"] = "majority"
    concern.setdefault("wtimeout", COMMIT_RETRY_WTIMEOUT_MS)
    return {**document, "writeConcern": concern}


class ClusterTimeKeeper:
    """The client's greatest ``$clusterTime`` (sessions spec: gossip)."""

    __slots__ = ("cluster_time",)

    def __init__(self) -> None:
        self.cluster_time: Mapping[str, Any] | None = None

    def advance(self, reply: Mapping[str, Any]) -> None:
        if "$clusterTime" not in reply:  # a standalone's replies, every handshake reply
            return
        value = cluster_time_of(reply)
        if value is not None:
            self.cluster_time = greater_cluster_time(self.cluster_time, value)
