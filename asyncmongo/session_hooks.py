"""What the executor asks of a session, and what it tells it (transactions, causal
consistency and sessions specs).

Before an operation: :meth:`ExecutorHooks._prepare` (checks, the transaction transition,
startTransaction on the first command), the target (the transaction's read preference, the
pinned mongos) and the session fields of each attempt. After: :meth:`ExecutorHooks._observe`
(gossip, operationTime, snapshot time, recovery token, pinning) and
:meth:`ExecutorHooks._on_error` (dirty server sessions, transient labels, unpinning).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from asyncmongo.core.operations.base import Target
from asyncmongo.core.selection.read_preference import Mode
from asyncmongo.core.sessions import (
    TxnAction,
    TxnState,
    greater_cluster_time,
    greater_operation_time,
    transition,
)
from asyncmongo.core.sessions.cluster_time import cluster_time_of
from asyncmongo.core.sessions.decorate import SessionFields, snapshot_time_of
from asyncmongo.core.sessions.labels import (
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_COMMIT_RESULT,
    is_network_error,
)
from asyncmongo.core.sessions.retryability import is_retryable_write_error
from asyncmongo.errors import (
    ConfigurationError,
    ConnectionFailure,
    InvalidOperation,
    MongoError,
    ServerSelectionTimeoutError,
)
from asyncmongo.session_state import SessionState

__all__ = ["ExecutorHooks", "SessionStep"]

#: The clock of the server sessions' last use (tests replace it).
monotonic: Callable[[], float] = time.monotonic


@dataclass(frozen=True, slots=True)
class SessionStep:
    """What ``_prepare`` decided for one operation."""

    in_transaction: bool
    starting: bool


_STEP_OUTSIDE_TRANSACTION = SessionStep(in_transaction=False, starting=False)
_STEP_ENDING_TRANSACTION = SessionStep(in_transaction=True, starting=False)


class ExecutorHooks(SessionState):
    """The executor's side of AsyncClientSession."""

    __slots__ = ()

    def _prepare(self, owner: object, name: str, *, acknowledged: bool) -> SessionStep:
        """Called once per operation before the first attempt: checks, the transaction
        transition and (for the first command of a transaction) startTransaction."""
        if owner is not self._client:
            raise InvalidOperation(
                "this session was started by another AsyncMongoClient and cannot be used "
                "with this one"
            )
        self._check_not_ended()
        if name in ("commitTransaction", "abortTransaction"):
            return _STEP_ENDING_TRANSACTION
        if self._txn_state.in_transaction:
            # Transactions spec: an operation's own write concern is ignored in a
            # transaction (even w:0): it runs acknowledged, the commit carries the concern.
            starting = self._txn_state is TxnState.STARTING
            self._txn_state = transition(self._txn_state, TxnAction.OPERATE).state
            return SessionStep(in_transaction=True, starting=starting)
        if not acknowledged and not self._implicit:
            raise ConfigurationError(
                "explicit sessions are incompatible with unacknowledged writes"
            )
        if self._txn_state is not TxnState.NONE:
            self._txn_state = transition(self._txn_state, TxnAction.OPERATE).state
            self._unpin()
        return _STEP_OUTSIDE_TRANSACTION

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
        causal = self._options.causally_consistent and not self._implicit
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
        # positional: a frozen dataclass's keyword construction costs more, on every operation
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
