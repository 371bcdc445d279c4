"""The one exception hierarchy of asyncmongo.

Names follow PyMongo's ``pymongo.errors`` where users already catch them, so code moving over
from Motor or PyMongo's ``AsyncMongoClient`` keeps its ``except`` clauses. Error labels are a
frozenset. Classification (retryable? state change? shutdown?) lives in pure predicates over the
spec's code tables (``asyncmongo.core.error_policy``), never in these classes.

This module is pure: it imports nothing from the runtime, so the core may raise these errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asyncmongo.bson.errors import (
    BSONError,
    InvalidBSON,
    InvalidDocument,
    InvalidId,
    InvalidStringData,
)

__all__ = [
    "AutoReconnect",
    "BSONError",
    "BulkWriteError",
    "ClientBulkWriteException",
    "CollectionInvalid",
    "ConfigurationError",
    "ConfigurationWarning",
    "ConnectionFailure",
    "CursorNotFound",
    "DeprecatedOptionWarning",
    "DocumentTooLarge",
    "DuplicateKeyError",
    "EncryptedCollectionError",
    "EncryptionError",
    "ExecutionTimeout",
    "InvalidArgument",
    "InvalidBSON",
    "InvalidDocument",
    "InvalidId",
    "InvalidName",
    "InvalidOperation",
    "InvalidStringData",
    "InvalidURI",
    "MongoError",
    "NetworkTimeout",
    "NotPrimaryError",
    "OperationFailure",
    "PoolClearedError",
    "PoolClosedError",
    "ProtocolError",
    "PyMongoError",
    "ServerSelectionTimeoutError",
    "WaitQueueTimeoutError",
    "WriteConcernError",
    "WriteError",
]


class MongoError(Exception):
    """Base class of every error asyncmongo raises (except the BSON codec's own).

    ``partial_result``: on any error raised out of ``AsyncCollection.bulk_write`` or
    ``insert_many`` (a network error, a timeout, a server error, a BulkWriteError), the
    BulkWriteResult of what the server acknowledged before the failure (CRUD spec: a bulk
    write error carries the partial result); None when the write was unacknowledged (w:0) or
    the error did not come out of a collection bulk write. ``client.bulk_write`` keeps its own
    on ClientBulkWriteException. PyMongo-compatible: BulkWriteError still has ``details``;
    the attribute is an addition, and the error's type is unchanged so ``except`` clauses
    (AutoReconnect, ...) keep working.
    """

    #: The partial BulkWriteResult of a failed collection bulk write (see the class doc).
    partial_result: Any = None

    def __init__(self, message: str = "", error_labels: Iterable[str] | None = None) -> None:
        super().__init__(message)
        self._message = message
        self._error_labels: frozenset[str] = frozenset(error_labels or ())

    @property
    def error_labels(self) -> frozenset[str]:
        """The server's (or driver's) error labels, e.g. ``RetryableWriteError``."""
        return self._error_labels

    def has_error_label(self, label: str) -> bool:
        """True if the error carries ``label`` (``TransientTransactionError``,
        ``UnknownTransactionCommitResult``, ``RetryableWriteError``, ...): how an application
        decides to retry a transaction or a commit, as in PyMongo."""
        return label in self._error_labels

    def _add_error_label(self, label: str) -> None:
        self._error_labels = self._error_labels | {label}

    def _remove_error_label(self, label: str) -> None:
        self._error_labels = self._error_labels - {label}

    @property
    def timeout(self) -> bool:
        """True when this error was caused by a timeout (client-side operation timeout)."""
        return False


#: PyMongo's name for the base class, for ``except`` clauses carried over from PyMongo.
PyMongoError = MongoError


class ProtocolError(MongoError):
    """The peer sent bytes that break the wire protocol; the connection is discarded."""


class ConfigurationError(MongoError):
    """An option, connection string or combination of settings is invalid."""


class InvalidURI(ConfigurationError):
    """A connection string cannot be parsed."""


class ConfigurationWarning(UserWarning):
    """A connection-string option was ignored: unknown key, invalid value, repeated key.

    The connection-string spec asks drivers to warn rather than fail for these, so that one
    URI stays portable between drivers with different option sets.
    """


class DeprecatedOptionWarning(DeprecationWarning):
    """A deprecated option name or value was used; the message names the replacement."""


class InvalidName(MongoError):
    """A database or collection name is invalid."""


class InvalidArgument(MongoError, ValueError, TypeError):
    """An API argument has the wrong type or value (an update without operators, a bad sort).

    It is also a ValueError and a TypeError, so ``except`` clauses written for PyMongo (which
    raises those builtins for the same mistakes) keep catching it.
    """


class InvalidOperation(MongoError):
    """The operation is not valid in this state (closed client, ended session, ...)."""


class CollectionInvalid(MongoError):
    """A collection-level operation is invalid (e.g. creating one that exists)."""


class DocumentTooLarge(InvalidDocument):
    """A document exceeds the server's maxBsonObjectSize."""


class ConnectionFailure(MongoError):
    """A network-level failure talking to a server."""


class AutoReconnect(ConnectionFailure):
    """A network failure after which the operation may succeed if retried.

    ``errors`` holds the per-server details when there are several (server selection).
    """

    def __init__(
        self,
        message: str = "",
        errors: Mapping[str, Any] | Sequence[Any] | None = None,
        error_labels: Iterable[str] | None = None,
    ) -> None:
        super().__init__(message, error_labels)
        self.errors = errors if errors is not None else []


class NetworkTimeout(AutoReconnect):
    """A network operation timed out (connectTimeoutMS, socketTimeoutMS or timeoutMS)."""

    @property
    def timeout(self) -> bool:
        return True


class NotPrimaryError(AutoReconnect):
    """The server is no longer a writable primary (or is recovering)."""


class ServerSelectionTimeoutError(AutoReconnect):
    """No suitable server was found within serverSelectionTimeoutMS (or timeoutMS)."""

    @property
    def timeout(self) -> bool:
        return True


class WaitQueueTimeoutError(ConnectionFailure):
    """No connection could be checked out of a pool in time."""

    @property
    def timeout(self) -> bool:
        return True


class PoolClearedError(AutoReconnect):
    """The pool was cleared (the server was marked Unknown) while waiting for a connection.

    It carries the ``RetryableWriteError`` label, as CMAP requires.
    """

    def __init__(self, message: str = "", error_labels: Iterable[str] | None = None) -> None:
        labels = set(error_labels or ())
        labels.add("RetryableWriteError")
        super().__init__(message, error_labels=labels)


class PoolClosedError(MongoError):
    """A connection was requested from a closed pool (CMAP: PoolClosedError).

    Not a network error: the server was removed from the topology or the client was closed, so
    SDAM must not mark anything Unknown because of it.
    """


class OperationFailure(MongoError):
    """The server answered a command with ``ok: 0``."""

    def __init__(
        self,
        message: str,
        code: int | None = None,
        details: Mapping[str, Any] | None = None,
        error_labels: Iterable[str] | None = None,
    ) -> None:
        labels = set(error_labels or ())
        if details is not None:
            labels.update(details.get("errorLabels", ()) or ())
        super().__init__(message, labels)
        self._code = code
        self._details = details

    @property
    def code(self) -> int | None:
        """The server's numeric error code (11000 for a duplicate key, 50 for a maxTimeMS expiry,
        ...), or None when the reply had none."""
        return self._code

    @property
    def code_name(self) -> str | None:
        """The server's name for the error code (``"DuplicateKey"``, ``"MaxTimeMSExpired"``, ...),
        or None when the reply had none."""
        if self._details is None:
            return None
        name = self._details.get("codeName")
        return name if isinstance(name, str) else None

    @property
    def details(self) -> Mapping[str, Any] | None:
        """The raw server reply (or write error document)."""
        return self._details

    def __str__(self) -> str:
        return f"{self._message}, full error: {self._details!r}"


class ExecutionTimeout(OperationFailure):
    """The server stopped the operation at its time limit (code 50, MaxTimeMSExpired)."""

    @property
    def timeout(self) -> bool:
        return True


class CursorNotFound(OperationFailure):
    """The server no longer knows the cursor (code 43)."""


class WriteError(OperationFailure):
    """A single write failed (one entry of ``writeErrors``)."""


class DuplicateKeyError(WriteError):
    """A write violated a unique index (code 11000)."""


class WriteConcernError(OperationFailure):
    """The write was applied but its write concern could not be satisfied."""


class BulkWriteError(OperationFailure):
    """A bulk write had write errors or a write concern error; ``details`` has them all."""

    def __init__(self, results: Mapping[str, Any]) -> None:
        super().__init__("batch op errors occurred", 65, results)


class ClientBulkWriteException(OperationFailure):
    """``client.bulk_write`` failed in part; the partial result and every error are kept."""

    def __init__(
        self,
        message: str,
        error: BaseException | None = None,
        write_errors: Mapping[int, Any] | None = None,
        write_concern_errors: Sequence[Any] | None = None,
        partial_result: Any = None,
    ) -> None:
        super().__init__(message, 65)  # PyMongo's code for "batch op errors occurred"
        self.error = error
        self.write_errors = dict(write_errors or {})
        self.write_concern_errors = list(write_concern_errors or [])
        self.partial_result = partial_result

    @property
    def timeout(self) -> bool:
        """The top-level ``error``'s: True when timeoutMS stopped the bulk write (CSOT:
        the timeout error is told apart even when it is wrapped)."""
        return isinstance(self.error, MongoError) and self.error.timeout


class EncryptionError(MongoError):
    """In-use encryption failed: encrypting, decrypting, creating or fetching a data key.

    ``cause`` is the underlying error (libmongocrypt's, or a key vault operation's), as in
    PyMongo; ``timeout`` is the cause's.
    """

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self._cause = cause

    @property
    def cause(self) -> Exception:
        """The exception that made encryption or decryption fail."""
        return self._cause

    @property
    def timeout(self) -> bool:
        return isinstance(self._cause, MongoError) and self._cause.timeout


class EncryptedCollectionError(EncryptionError):
    """Creating a collection with encrypted fields failed (PyMongo's name).

    ``encrypted_fields`` is the encryptedFields document as far as it was completed (the data
    keys created before the failure have their ``keyId``), so they are not lost.
    """

    def __init__(self, cause: Exception, encrypted_fields: Mapping[str, Any] | None = None) -> None:
        super().__init__(cause)
        self._encrypted_fields = encrypted_fields

    @property
    def encrypted_fields(self) -> Mapping[str, Any] | None:
        """The encryptedFields document, with the ``keyId`` of each data key created."""
        return self._encrypted_fields
