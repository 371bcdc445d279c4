"""Transaction error labels (transactions spec, "Error labels").

Which errors are network errors for a transaction, which commit errors leave the outcome
unknown (UnknownTransactionCommitResult) and which prove the commit did not happen. Pure
predicates on the exception: the session and ``with_transaction`` act on the answers.
"""

from __future__ import annotations

from typing import Final

from asyncmongo.core.sessions.retryability import is_retryable_write_error
from asyncmongo.errors import (
    ConnectionFailure,
    MongoError,
    NotPrimaryError,
    OperationFailure,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
    WriteConcernError,
)

__all__ = [
    "TRANSIENT_TRANSACTION_ERROR",
    "UNKNOWN_COMMIT_RESULT",
    "is_max_time_expired",
    "is_network_error",
    "label_commit_error",
]

TRANSIENT_TRANSACTION_ERROR: Final = "TransientTransactionError"
UNKNOWN_COMMIT_RESULT: Final = "UnknownTransactionCommitResult"
#: Transactions spec: these write concern errors mean the commit certainly did not happen
#: (UnsatisfiableWriteConcern, UnknownReplWriteConcern).
COMMIT_DEFINITE_CODES: Final = frozenset({79, 100})
MAX_TIME_MS_EXPIRED: Final = 50


def is_network_error(exc: BaseException) -> bool:
    """A connection-level failure (not a state change, selection or wait-queue timeout)."""
    return isinstance(exc, ConnectionFailure) and not isinstance(
        exc, NotPrimaryError | ServerSelectionTimeoutError | WaitQueueTimeoutError
    )


def is_max_time_expired(exc: MongoError) -> bool:
    """The server's MaxTimeMSExpired (code 50): a commit is not retried after it."""
    return isinstance(exc, OperationFailure) and exc.code == MAX_TIME_MS_EXPIRED


def label_commit_error(exc: MongoError) -> None:
    """Transactions spec, "UnknownTransactionCommitResult": network and selection errors,
    retryable errors, MaxTimeMSExpired and write concern errors (except the two that prove
    the commit did not happen) leave the outcome unknown."""
    unknown = (
        is_network_error(exc)
        or isinstance(exc, ServerSelectionTimeoutError)
        or is_retryable_write_error(exc)
        or is_max_time_expired(exc)
        or (isinstance(exc, WriteConcernError) and exc.code not in COMMIT_DEFINITE_CODES)
    )
    if unknown:
        exc._remove_error_label(TRANSIENT_TRANSACTION_ERROR)
        exc._add_error_label(UNKNOWN_COMMIT_RESULT)
