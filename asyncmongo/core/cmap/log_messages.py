"""The connection-pool log messages of specs/logging and CMAP: Connection Pool Logging.

``log_message(event)`` turns a CMAP event into a ``LogMessage``: the structured fields under the
spec's exact names (null values omitted, as the logging spec requires) and the unstructured
text. The runtime logs the ``LogMessage`` object itself at DEBUG on the "asyncmongo.connection"
logger, so ``str(record.msg)`` is the text and ``record.msg.fields`` the structured form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.core.cmap.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutFailedReason,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionClosedReason,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolEvent,
    PoolReadyEvent,
)

__all__ = ["CHECKOUT_FAILED_REASON_TEXT", "CLOSED_REASON_TEXT", "LogMessage", "log_message"]

CLOSED_REASON_TEXT: Mapping[ConnectionClosedReason, str] = {
    ConnectionClosedReason.STALE: "Connection became stale because the pool was cleared",
    ConnectionClosedReason.IDLE: (
        "Connection has been available but unused for longer than the configured max idle time"
    ),
    ConnectionClosedReason.ERROR: "An error occurred while using the connection",
    ConnectionClosedReason.POOL_CLOSED: "Connection pool was closed",
}

CHECKOUT_FAILED_REASON_TEXT: Mapping[ConnectionCheckOutFailedReason, str] = {
    ConnectionCheckOutFailedReason.TIMEOUT: (
        "Wait queue timeout elapsed without a connection becoming available"
    ),
    ConnectionCheckOutFailedReason.CONNECTION_ERROR: (
        "An error occurred while trying to establish a new connection"
    ),
    ConnectionCheckOutFailedReason.POOL_CLOSED: "Connection pool was closed",
}

_POOL_CREATED_OPTIONS = (
    "maxIdleTimeMS",
    "minPoolSize",
    "maxPoolSize",
    "maxConnecting",
    "waitQueueTimeoutMS",
)


@dataclass(frozen=True, slots=True)
class LogMessage:
    """One structured log message: ``fields`` carries "message" plus the spec's keys."""

    fields: Mapping[str, Any]
    text: str

    def __str__(self) -> str:
        return self.text


def log_message(event: PoolEvent) -> LogMessage:
    """The spec's log message for ``event``."""
    return _BUILDERS[type(event)](event)


def format_error(error: BaseException) -> str:
    """The logging spec leaves the format open; type name and message carry all we report."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _common(event: PoolEvent, message: str) -> dict[str, Any]:
    host, port = event.address
    fields: dict[str, Any] = {"message": message, "serverHost": host}
    if port is not None:
        fields["serverPort"] = port
    return fields


def _where(fields: Mapping[str, Any]) -> str:
    port = fields.get("serverPort")
    return fields["serverHost"] if port is None else f"{fields['serverHost']}:{port}"


def _pool_created(event: Any) -> LogMessage:
    assert isinstance(event, PoolCreatedEvent)
    fields = _common(event, "Connection pool created")
    for name in _POOL_CREATED_OPTIONS:
        if name in event.options:
            fields[name] = event.options[name]
    used = ", ".join(f"{name}={fields[name]}" for name in _POOL_CREATED_OPTIONS if name in fields)
    text = f"Connection pool created for {_where(fields)}"
    return LogMessage(fields, f"{text} using options {used}" if used else text)


def _pool_ready(event: Any) -> LogMessage:
    fields = _common(event, "Connection pool ready")
    return LogMessage(fields, f"Connection pool ready for {_where(fields)}")


def _pool_cleared(event: Any) -> LogMessage:
    assert isinstance(event, PoolClearedEvent)
    fields = _common(event, "Connection pool cleared")
    text = f"Connection pool for {_where(fields)} cleared"
    if event.service_id is not None:
        fields["serviceId"] = str(event.service_id)
        text += f" for serviceId {fields['serviceId']}"
    return LogMessage(fields, text)


def _pool_closed(event: Any) -> LogMessage:
    fields = _common(event, "Connection pool closed")
    return LogMessage(fields, f"Connection pool closed for {_where(fields)}")


def _connection(event: Any, message: str) -> tuple[dict[str, Any], str]:
    """The fields of a message about one connection, and its text's "address=..., driver-generated
    ID=..." part that every such message shares."""
    fields = _common(event, message)
    fields["driverConnectionId"] = event.connection_id
    return fields, f"address={_where(fields)}, driver-generated ID={event.connection_id}"


def _reason(fields: dict[str, Any], reason: str, error: BaseException | None) -> str:
    """Adds the spec's "reason" (and "error" when the reason was one) to ``fields``; returns
    their text, ". Reason: ...[. Error: ...]"."""
    fields["reason"] = reason
    if error is None:
        return f". Reason: {reason}"
    fields["error"] = format_error(error)
    return f". Reason: {reason}. Error: {fields['error']}"


def _connection_created(event: Any) -> LogMessage:
    assert isinstance(event, ConnectionCreatedEvent)
    fields, which = _connection(event, "Connection created")
    return LogMessage(fields, f"Connection created: {which}")


def _connection_ready(event: Any) -> LogMessage:
    assert isinstance(event, ConnectionReadyEvent)
    fields, which = _connection(event, "Connection ready")
    fields["durationMS"] = event.duration_ms
    text = f"Connection ready: {which}, established in={event.duration_ms:.3f} ms"
    return LogMessage(fields, text)


def _connection_closed(event: Any) -> LogMessage:
    assert isinstance(event, ConnectionClosedEvent)
    fields, which = _connection(event, "Connection closed")
    error = event.error if event.reason is ConnectionClosedReason.ERROR else None
    reason = _reason(fields, CLOSED_REASON_TEXT[event.reason], error)
    return LogMessage(fields, f"Connection closed: {which}{reason}")


def _checkout_started(event: Any) -> LogMessage:
    fields = _common(event, "Connection checkout started")
    return LogMessage(fields, f"Checkout started for connection to {_where(fields)}")


def _checkout_failed(event: Any) -> LogMessage:
    assert isinstance(event, ConnectionCheckOutFailedEvent)
    fields = _common(event, "Connection checkout failed")
    failed_to_connect = event.reason is ConnectionCheckOutFailedReason.CONNECTION_ERROR
    error = event.error if failed_to_connect else None
    reason = _reason(fields, CHECKOUT_FAILED_REASON_TEXT[event.reason], error)
    fields["durationMS"] = event.duration_ms
    text = f"Checkout failed for connection to {_where(fields)}{reason}"
    return LogMessage(fields, f"{text}. Duration: {event.duration_ms:.3f} ms")


def _checked_out(event: Any) -> LogMessage:
    assert isinstance(event, ConnectionCheckedOutEvent)
    fields, which = _connection(event, "Connection checked out")
    fields["durationMS"] = event.duration_ms
    text = f"Connection checked out: {which}, duration={event.duration_ms:.3f} ms"
    return LogMessage(fields, text)


def _checked_in(event: Any) -> LogMessage:
    assert isinstance(event, ConnectionCheckedInEvent)
    fields, which = _connection(event, "Connection checked in")
    return LogMessage(fields, f"Connection checked in: {which}")


_BUILDERS: Mapping[type, Callable[[Any], LogMessage]] = {
    PoolCreatedEvent: _pool_created,
    PoolReadyEvent: _pool_ready,
    PoolClearedEvent: _pool_cleared,
    PoolClosedEvent: _pool_closed,
    ConnectionCreatedEvent: _connection_created,
    ConnectionReadyEvent: _connection_ready,
    ConnectionClosedEvent: _connection_closed,
    ConnectionCheckOutStartedEvent: _checkout_started,
    ConnectionCheckOutFailedEvent: _checkout_failed,
    ConnectionCheckedOutEvent: _checked_out,
    ConnectionCheckedInEvent: _checked_in,
}
