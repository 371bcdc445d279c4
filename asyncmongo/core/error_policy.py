"""The spec's error-code tables and the SDAM error-handling verdicts, as pure functions.

Classification is predicates over code tables (SDAM "not writable primary" and "node is
recovering", the shutdown subset, retryable reads/writes). The verdict functions take an error
described as data (``ApplicationError`` / ``MonitorError``) plus what the topology knows (the
server's description and its pool generation) and return what the runtime must do: ignore the
error as stale, mark the server Unknown, clear its pool (interrupting in-use connections for a
monitor timeout), request an immediate check or cancel the in-progress one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Final

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_version import TopologyVersion, compare_topology_version
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    MongoError,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    PoolClearedError,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
    WriteConcernError,
    WriteError,
)

# -- code tables -----------------------------------------------------------------------------

#: SDAM "node is recovering" codes.
RECOVERING_CODES: Final = frozenset({11600, 11602, 13436, 189, 91})
#: SDAM "not writable primary" codes.
NOT_WRITABLE_PRIMARY_CODES: Final = frozenset({10107, 13435, 10058})
#: SDAM "node is shutting down" codes (a subset of the recovering codes).
SHUTDOWN_CODES: Final = frozenset({11600, 91})
#: Retryable Reads: codes of retryable server errors.
RETRYABLE_READ_CODES: Final = frozenset(
    {262, 11600, 11602, 10107, 13435, 13436, 189, 134, 91, 7, 6, 89, 9001}
)
#: Retryable Writes: codes that earn a RetryableWriteError label from pre-4.4 servers.
RETRYABLE_WRITE_CODES: Final = frozenset(
    {11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001, 262}
)
#: Backpressure: errors with this label never change SDAM state.
SYSTEM_OVERLOADED_LABEL: Final = "SystemOverloadedError"


def is_recovering(code: int | None, message: str = "") -> bool:
    """SDAM isRecovering: by code if there is one, else by the message."""
    if code is not None:
        return code in RECOVERING_CODES
    return "not master or secondary" in message or "node is recovering" in message


def is_not_writable_primary(code: int | None, message: str = "") -> bool:
    """SDAM isNotWritablePrimary: by code if there is one, else by the message."""
    if code is not None:
        return code in NOT_WRITABLE_PRIMARY_CODES
    if is_recovering(None, message):
        return False
    return "not master" in message


def is_state_change_error(code: int | None, message: str = "") -> bool:
    """A "not writable primary" or "node is recovering" error."""
    return is_recovering(code, message) or is_not_writable_primary(code, message)


def is_shutdown(code: int | None) -> bool:
    """A "node is shutting down" error: the pool must be cleared."""
    return code is not None and code in SHUTDOWN_CODES


def is_retryable_read_code(code: int | None) -> bool:
    return code is not None and code in RETRYABLE_READ_CODES


def is_retryable_write_code(code: int | None) -> bool:
    return code is not None and code in RETRYABLE_WRITE_CODES


# -- errors as data --------------------------------------------------------------------------


class ErrorKind(Enum):
    """What failed: the network, the network by timeout, or the server with a command error."""

    NETWORK = "network"
    TIMEOUT = "timeout"
    COMMAND = "command"


class ErrorPhase(Enum):
    """Where on the connection the error happened (SDAM "Network error when reading or writing").

    CONNECTING covers TCP/TLS setup and the initial hello; AUTHENTICATING the auth step;
    ESTABLISHED everything after the connection was handed to an operation.
    """

    CONNECTING = "connecting"
    AUTHENTICATING = "authenticating"
    ESTABLISHED = "established"

    @property
    def completed_handshake(self) -> bool:
        return self is ErrorPhase.ESTABLISHED


@dataclass(frozen=True, slots=True)
class ApplicationError:
    """An error an application operation hit on a connection to one server."""

    kind: ErrorKind
    phase: ErrorPhase
    generation: int
    code: int | None = None
    message: str = ""
    topology_version: TopologyVersion | None = None
    labels: frozenset[str] = frozenset()
    max_wire_version: int | None = None
    service_id: ObjectId | None = None

    @classmethod
    def from_command_reply(
        cls,
        reply: Mapping[str, Any],
        generation: int,
        phase: ErrorPhase = ErrorPhase.ESTABLISHED,
        max_wire_version: int | None = None,
        service_id: ObjectId | None = None,
    ) -> ApplicationError | None:
        """The SDAM-relevant error of a command reply, or None when it has none.

        ``ok: 0`` gives the top-level code and errmsg; otherwise a writeConcernError's.
        ``writeErrors`` are never checked (SDAM).
        """
        labels = frozenset(_labels(reply.get("errorLabels")))
        if reply.get("ok") in (1, 1.0, True):
            source = reply.get("writeConcernError")
            if not isinstance(source, Mapping):
                return None
            labels |= frozenset(_labels(source.get("errorLabels")))
        else:
            source = reply
        version_doc = reply.get("topologyVersion", source.get("topologyVersion"))
        code = source.get("code")
        message = source.get("errmsg", source.get("$err", ""))
        return cls(
            ErrorKind.COMMAND,
            phase,
            generation,
            code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            message=message if isinstance(message, str) else "",
            topology_version=TopologyVersion.from_document(version_doc),
            labels=labels,
            max_wire_version=max_wire_version,
            service_id=service_id,
        )

    @classmethod
    def from_exception(
        cls,
        exc: BaseException,
        generation: int,
        phase: ErrorPhase = ErrorPhase.ESTABLISHED,
        max_wire_version: int | None = None,
        service_id: ObjectId | None = None,
    ) -> ApplicationError | None:
        """The SDAM view of an exception an operation raised, or None if SDAM ignores it.

        Pool-cleared, wait-queue and selection timeouts, and write errors never change SDAM
        state. Network errors and timeouts (ours or the OS's) and command errors (with their
        reply, including a write concern error) are described for the verdict.
        """
        if isinstance(
            exc, PoolClearedError | WaitQueueTimeoutError | ServerSelectionTimeoutError | WriteError
        ):
            return None
        labels = exc.error_labels if isinstance(exc, MongoError) else frozenset()
        reply = _reply_of(exc)
        if reply is not None:
            error = cls.from_command_reply(reply, generation, phase, max_wire_version, service_id)
            return None if error is None else _with_labels(error, labels)
        if isinstance(exc, NetworkTimeout | TimeoutError):
            kind = ErrorKind.TIMEOUT
        elif isinstance(exc, ConnectionFailure | OSError):
            kind = ErrorKind.NETWORK
        else:
            return None
        return cls(
            kind,
            phase,
            generation,
            message=str(exc),
            labels=labels,
            max_wire_version=max_wire_version,
            service_id=service_id,
        )

    def describe(self) -> str:
        """The text stored in the Unknown ServerDescription's error field."""
        if self.kind is ErrorKind.COMMAND:
            code = f" (code {self.code})" if self.code is not None else ""
            return f"command error{code}: {self.message}"
        return f"{self.kind.value} error: {self.message}" if self.message else self.kind.value


def _reply_of(exc: BaseException) -> Mapping[str, Any] | None:
    """The server reply behind a command-error exception, shaped like a reply."""
    if isinstance(exc, NotPrimaryError):
        details = exc.errors if isinstance(exc.errors, Mapping) else {}
        return {"errmsg": str(exc), **details, "ok": 0}
    if isinstance(exc, WriteConcernError):
        return {"ok": 1, "writeConcernError": {"code": exc.code, "errmsg": _message(exc)}}
    if isinstance(exc, BulkWriteError):
        concern_errors = (exc.details or {}).get("writeConcernErrors") or []
        if not concern_errors:
            return {"ok": 1}
        return {"ok": 1, "writeConcernError": concern_errors[-1]}
    if isinstance(exc, OperationFailure):
        reply = exc.details
        if isinstance(reply, Mapping) and reply.get("ok") not in (1, 1.0, True, None):
            return reply
        return {"ok": 0, "code": exc.code, "errmsg": _message(exc)}
    return None


def _message(exc: BaseException) -> str:
    """The error's own message (``str`` of an OperationFailure adds the full reply)."""
    return str(exc.args[0]) if exc.args else ""


def _with_labels(error: ApplicationError, labels: frozenset[str]) -> ApplicationError:
    if labels <= error.labels:
        return error
    return replace(error, labels=error.labels | labels)


def _labels(value: Any) -> Iterable[str]:
    if isinstance(value, list | tuple):
        return [label for label in value if isinstance(label, str)]
    return []


@dataclass(frozen=True, slots=True)
class ErrorVerdict:
    """What the runtime must do about an error (all False/None: nothing)."""

    ignored_because: str | None = None
    new_description: ServerDescription | None = None
    clear_pool: bool = False
    interrupt_in_use_connections: bool = False
    service_id: ObjectId | None = None
    request_immediate_check: bool = False
    cancel_check: bool = False

    @property
    def mark_unknown(self) -> bool:
        return self.new_description is not None


def _ignore(reason: str) -> ErrorVerdict:
    return ErrorVerdict(ignored_because=reason)


# -- application errors ----------------------------------------------------------------------


def application_error_verdict(
    server: ServerDescription,
    topology_type: TopologyType,
    pool_generation: int,
    error: ApplicationError,
) -> ErrorVerdict:
    """SDAM "Error handling" (handleError) for an error an operation hit on ``server``."""
    if error.generation < pool_generation:
        return _ignore("stale: the connection belongs to an older pool generation")
    if compare_topology_version(server.topology_version, error.topology_version) >= 0:
        return _ignore("stale: the server's topologyVersion is not older than the error's")
    load_balanced = topology_type is TopologyType.LOAD_BALANCED
    if load_balanced and error.service_id is None:
        # Load balancers spec: an error before the hello named the service (the initial
        # hello itself failing) cannot be tied to a serviceId, so it clears nothing.
        return _ignore("load balanced: no serviceId is known for this connection yet")
    if error.kind is ErrorKind.COMMAND and is_state_change_error(error.code, error.message):
        return _state_change_verdict(server, error, load_balanced)
    if SYSTEM_OVERLOADED_LABEL in error.labels:
        return _ignore("backpressure: the error has the SystemOverloadedError label")
    if error.kind is not ErrorKind.COMMAND and error.phase is ErrorPhase.CONNECTING:
        return _ignore("a network error while connecting or in the hello changes nothing")
    if error.kind is ErrorKind.TIMEOUT and error.phase.completed_handshake:
        return _ignore("a timeout on an established connection may be a slow operation")
    if error.kind is ErrorKind.COMMAND and error.phase.completed_handshake:
        return _ignore("an ordinary command error says nothing about the server's state")
    return _unavailable_verdict(server, error, load_balanced)


def _state_change_verdict(
    server: ServerDescription, error: ApplicationError, load_balanced: bool
) -> ErrorVerdict:
    """ "Not writable primary" / "node is recovering": Unknown, check now, clear on shutdown."""
    unknown = None
    if not load_balanced:
        unknown = ServerDescription.unknown(
            server.address, error.describe(), topology_version=error.topology_version
        )
    return ErrorVerdict(
        new_description=unknown,
        clear_pool=is_shutdown(error.code),
        service_id=error.service_id if load_balanced else None,
        request_immediate_check=True,
    )


def _unavailable_verdict(
    server: ServerDescription, error: ApplicationError, load_balanced: bool
) -> ErrorVerdict:
    """A network error (or a handshake/auth failure): Unknown, clear the pool, cancel check."""
    if load_balanced:
        return ErrorVerdict(clear_pool=True, service_id=error.service_id)
    unknown = ServerDescription.unknown(server.address, error.describe())
    return ErrorVerdict(new_description=unknown, clear_pool=True, cancel_check=True)


# -- monitor errors --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MonitorError:
    """A failed server check (hello): network error, timeout, or ``ok: 0``."""

    kind: ErrorKind
    message: str = ""
    labels: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class MonitorVerdict:
    """Server Monitoring "Network or command error during server check"."""

    new_description: ServerDescription
    clear_pool: bool
    interrupt_in_use_connections: bool
    check_again_immediately: bool


def monitor_error_verdict(previous: ServerDescription, error: MonitorError) -> MonitorVerdict:
    """Mark Unknown and clear the pool (interrupting in-use connections on a timeout); a
    network error on a server that was known is retried at once (no sleep)."""
    text = f"{error.kind.value} error: {error.message}" if error.message else error.kind.value
    network = error.kind is not ErrorKind.COMMAND
    return MonitorVerdict(
        new_description=ServerDescription.unknown(previous.address, text),
        clear_pool=True,
        interrupt_in_use_connections=error.kind is ErrorKind.TIMEOUT,
        check_again_immediately=network and previous.is_known,
    )
