"""Which commands are retryable and which errors earn a retry (retryable reads/writes specs).

The executor asks these predicates; the answers depend only on the command, the error and
the server's wire version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from asyncmongo.core.error_policy import RETRYABLE_READ_CODES, RETRYABLE_WRITE_CODES
from asyncmongo.errors import (
    ConnectionFailure,
    MongoError,
    NotPrimaryError,
    OperationFailure,
    PoolClearedError,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
)

__all__ = [
    "RETRYABLE_READ_COMMANDS",
    "RETRYABLE_WRITE_COMMANDS",
    "RETRYABLE_WRITE_ERROR",
    "is_retryable_read_error",
    "is_retryable_write_error",
    "label_retryable_write_error",
]

RETRYABLE_WRITE_ERROR: Final = "RetryableWriteError"
NO_WRITES_PERFORMED: Final = "NoWritesPerformed"
#: Retryable writes spec, "Supported Write Operations" (update/delete only single-document).
RETRYABLE_WRITE_COMMANDS: Final = frozenset(
    {"insert", "update", "delete", "findAndModify", "bulkWrite"}
)
#: Retryable reads spec, "Supported Read Operations" (aggregate without $out/$merge).
RETRYABLE_READ_COMMANDS: Final = frozenset(
    {"find", "aggregate", "distinct", "count", "listDatabases", "listCollections", "listIndexes"}
)
#: Retryable writes spec: a server at or above this wire version (4.4) labels its own errors.
LABELS_FROM_SERVER_WIRE_VERSION: Final = 9


def _network(exc: BaseException) -> bool:
    """A network error (not a driver-side timeout waiting for a server or a connection)."""
    if isinstance(exc, ServerSelectionTimeoutError | WaitQueueTimeoutError):
        return False
    return isinstance(exc, ConnectionFailure) and not isinstance(exc, NotPrimaryError)


def _code_of(exc: BaseException) -> int | None:
    if isinstance(exc, OperationFailure):
        return exc.code
    if isinstance(exc, NotPrimaryError):
        errors = exc.errors
        if isinstance(errors, Mapping):
            code = errors.get("code")
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    return None


def label_retryable_write_error(exc: BaseException, max_wire_version: int | None) -> None:
    """Add RetryableWriteError where the driver must (retryable writes spec, "Determining
    Retryable Errors"): network errors always; server errors by code only below 4.4."""
    if not isinstance(exc, MongoError):
        return
    if _network(exc):
        exc._add_error_label(RETRYABLE_WRITE_ERROR)
        return
    if max_wire_version is not None and max_wire_version >= LABELS_FROM_SERVER_WIRE_VERSION:
        return
    if _code_of(exc) in RETRYABLE_WRITE_CODES:
        exc._add_error_label(RETRYABLE_WRITE_ERROR)
    elif isinstance(exc, OperationFailure) and isinstance(exc.details, Mapping):
        concern = exc.details.get("writeConcernError")
        if isinstance(concern, Mapping) and concern.get("code") in RETRYABLE_WRITE_CODES:
            exc._add_error_label(RETRYABLE_WRITE_ERROR)


def is_retryable_write_error(exc: BaseException) -> bool:
    """After labelling: the error carries RetryableWriteError (PoolClearedError always does)."""
    return isinstance(exc, MongoError) and exc.has_error_label(RETRYABLE_WRITE_ERROR)


def is_retryable_read_error(exc: BaseException) -> bool:
    """Retryable reads spec: network errors, PoolClearedError and the retryable codes."""
    if isinstance(exc, PoolClearedError) or _network(exc):
        return True
    if isinstance(exc, NotPrimaryError):
        code = _code_of(exc)
        return code is None or code in RETRYABLE_READ_CODES
    return _code_of(exc) in RETRYABLE_READ_CODES


def write_concern_error_of(reply: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``writeConcernError`` of an ok reply, if any."""
    concern = reply.get("writeConcernError")
    return concern if isinstance(concern, Mapping) else None
