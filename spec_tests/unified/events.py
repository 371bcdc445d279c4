"""Observing a client's events and checking expectEvents / waitForEvent / assertEventCount.

A :class:`ClientObserver` is the event listener of one client entity. It keeps the events
the entity's ``observeEvents`` asks for (minus ``configureFailPoint``, the entity's
``ignoreCommandMonitoringEvents`` and, unless ``observeSensitiveCommands``, sensitive
commands), counts checked-out connections for assertNumberConnectionsCheckedOut, and copies
events into ``storeEventsAsEntities`` lists as documents.

Event names come from the class names (``ConnectionCheckedOutEvent`` ->
``connectionCheckedOutEvent``): asyncmongo's events carry PyMongo's class names, which are
the spec's.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from spec_tests.unified.matcher import MatchContext, MatchError, match

__all__ = [
    "CMAP_EVENTS",
    "COMMAND_EVENTS",
    "SDAM_EVENTS",
    "ClientObserver",
    "check_expected_events",
    "event_matches",
    "event_name",
]

COMMAND_EVENTS: Final = frozenset({
    "commandStartedEvent", "commandSucceededEvent", "commandFailedEvent"})
CMAP_EVENTS: Final = frozenset({
    "poolCreatedEvent", "poolReadyEvent", "poolClearedEvent", "poolClosedEvent",
    "connectionCreatedEvent", "connectionReadyEvent", "connectionClosedEvent",
    "connectionCheckOutStartedEvent", "connectionCheckOutFailedEvent",
    "connectionCheckedOutEvent", "connectionCheckedInEvent"})
SDAM_EVENTS: Final = frozenset({
    "serverDescriptionChangedEvent", "serverHeartbeatStartedEvent",
    "serverHeartbeatSucceededEvent", "serverHeartbeatFailedEvent",
    "topologyDescriptionChangedEvent", "topologyOpeningEvent", "topologyClosedEvent",
    "serverOpeningEvent", "serverClosedEvent"})
_CATEGORIES: Final = {"command": COMMAND_EVENTS, "cmap": CMAP_EVENTS, "sdam": SDAM_EVENTS}

#: Command Logging and Monitoring, "Security": commands whose events are redacted.
_SENSITIVE: Final = frozenset({
    "authenticate", "saslstart", "saslcontinue", "getnonce", "createuser", "updateuser",
    "copydbgetnonce", "copydbsaslstart", "copydb"})
_HELLO: Final = frozenset({"hello", "ismaster"})
_WAIT_SECONDS: Final = 10.0


def event_name(event: Any) -> str:
    """The spec's name of an event object: its class name with a lower-case first letter."""
    name = type(event).__name__
    return name[:1].lower() + name[1:]


def _is_sensitive(event: Any) -> bool:
    name = str(getattr(event, "command_name", "")).lower()
    if name in _SENSITIVE:
        return True
    if name in _HELLO:
        command = getattr(event, "command", None)
        # A hello with speculativeAuthenticate is published redacted (empty).
        return command is not None and (not command or "speculativeAuthenticate" in command)
    return False


class ClientObserver:
    """The event listener of one client entity (a plain callable, as asyncmongo expects)."""

    def __init__(self, *, observe: Iterable[str] = (), ignore_commands: Iterable[str] = (),
                 observe_sensitive: bool = False) -> None:
        self.observe = frozenset(observe)
        self.ignore_commands = frozenset(["configureFailPoint", *ignore_commands])
        self.observe_sensitive = observe_sensitive
        self.events: list[Any] = []
        self.stores: dict[frozenset[str], list[dict[str, Any]]] = {}
        self.checked_out = 0
        self._ignored_requests: set[Any] = set()
        self._changed = asyncio.Event()

    def store_into(self, names: Iterable[str], sink: list[dict[str, Any]]) -> None:
        """storeEventsAsEntities: append these events (as documents) to ``sink``."""
        self.stores[frozenset(names)] = sink

    def __call__(self, event: Any) -> None:
        name = event_name(event)
        if name == "connectionCheckedOutEvent":
            self.checked_out += 1
        elif name == "connectionCheckedInEvent":
            self.checked_out -= 1
        for names, sink in self.stores.items():
            if name in names:
                sink.append(event_document(name, event))
        if name in self.observe and not self._ignored(name, event):
            self.events.append(event)
            self._changed.set()

    def _ignored(self, name: str, event: Any) -> bool:
        if name not in COMMAND_EVENTS:
            return False
        request_id = getattr(event, "request_id", None)
        if name == "commandStartedEvent":
            if getattr(event, "command_name", None) in self.ignore_commands or (
                    not self.observe_sensitive and _is_sensitive(event)):
                self._ignored_requests.add(request_id)
                return True
            return False
        if request_id in self._ignored_requests:
            self._ignored_requests.discard(request_id)
            return True
        return getattr(event, "command_name", None) in self.ignore_commands or (
            not self.observe_sensitive
            and str(getattr(event, "command_name", "")).lower() in _SENSITIVE)

    def of_category(self, category: str) -> list[Any]:
        kinds = _CATEGORIES[category]
        return [e for e in self.events if event_name(e) in kinds]

    def count(self, expected: Mapping[str, Any], ctx: MatchContext | None) -> int:
        return sum(event_matches(expected, e, ctx) for e in self.events)

    async def wait_for(self, expected: Mapping[str, Any], count: int,
                       ctx: MatchContext | None) -> None:
        """waitForEvent: until ``count`` matching events were observed (10 s at most)."""
        timeout = _WAIT_SECONDS
        deadline = time.monotonic() + timeout
        while self.count(expected, ctx) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"waited {timeout}s for {count} event(s) {dict(expected)!r}; saw "
                    f"{self.count(expected, ctx)}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                continue


def event_document(name: str, event: Any) -> dict[str, Any]:
    """An event as a document, for storeEventsAsEntities (name, observedAt, fields)."""
    document: dict[str, Any] = {"name": name, "observedAt": time.time()}
    for field in getattr(type(event), "__dataclass_fields__", {}):
        value = getattr(event, field)
        parts = field.split("_")
        key = parts[0] + "".join(p.title() for p in parts[1:])
        document[key] = value.value if isinstance(value, enum.Enum) else value
    return document


def _check_has(flag: bool, value: Any, what: str) -> None:
    if what == "serviceId":
        present = value is not None and bytes(getattr(value, "binary", b"")) != b"\0" * 12
    else:
        present = isinstance(value, int) and value > 0
    if flag != present:
        raise MatchError(f"expected {what} {'set' if flag else 'unset'}, got {value!r}")


def _description_type(description: Any) -> str:
    kind = getattr(description, "server_type", None) or description.topology_type
    return str(kind.value)


def _check_fields(name: str, expected: Mapping[str, Any], event: Any,
                  ctx: MatchContext | None) -> None:
    for key, want in expected.items():
        if key == "command":
            match(want, event.command, ctx, root=True, path="command")
        elif key == "reply":
            match(want, event.reply, ctx, root=True, path="reply")
        elif key == "commandName":
            _equal(want, event.command_name, key)
        elif key == "databaseName":
            _equal(want, event.database_name, key)
        elif key == "hasServiceId":
            _check_has(want, event.service_id, "serviceId")
        elif key == "hasServerConnectionId":
            _check_has(want, event.server_connection_id, "serverConnectionId")
        elif key == "interruptInUseConnections":
            _equal(want, event.interrupt_in_use_connections, key)
        elif key == "reason":
            _equal(want, getattr(event.reason, "value", event.reason), key)
        elif key == "awaited":
            _equal(want, event.awaited, key)
        elif key in ("previousDescription", "newDescription"):
            attr = "previous_description" if key == "previousDescription" else "new_description"
            if "type" in want:
                _equal(want["type"], _description_type(getattr(event, attr)), f"{key}.type")
        else:
            raise MatchError(f"{name}: the runner does not know how to check {key!r}")


def _equal(expected: Any, actual: Any, what: str) -> None:
    if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
        raise MatchError(f"{what}: expected {expected!r}, got {actual!r}")


def event_matches(expected: Mapping[str, Any], event: Any, ctx: MatchContext | None) -> bool:
    """Whether an observed event matches one expectedEvent object."""
    name, fields = next(iter(expected.items()))
    if event_name(event) != name:
        return False
    try:
        _check_fields(name, fields, event, ctx)
    except MatchError:
        return False
    return True


def check_expected_events(expected: Sequence[Mapping[str, Any]], observed: Sequence[Any],
                          ctx: MatchContext | None, *, ignore_extra: bool) -> None:
    """expectedEventsForClient: the same events in order (extra ones only if allowed)."""
    names = [event_name(e) for e in observed]
    if len(observed) < len(expected) or (not ignore_extra and len(observed) != len(expected)):
        raise MatchError(f"expected {len(expected)} events "
                         f"{[next(iter(e)) for e in expected]}, observed {len(observed)}: "
                         f"{names}")
    for index, (want, got) in enumerate(zip(expected, observed, strict=False)):
        name, fields = next(iter(want.items()))
        if event_name(got) != name:
            raise MatchError(f"event {index}: expected {name}, observed {names[index]} "
                             f"(all: {names})")
        try:
            _check_fields(name, fields, got, ctx)
        except MatchError as exc:
            raise MatchError(f"event {index} ({name}): {exc}") from None
