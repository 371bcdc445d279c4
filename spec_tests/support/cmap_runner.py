"""The CMAP cmap-format test runner: the spec's threads as asyncio tasks, fake connections.

See spec_tests/data/connection-monitoring-and-pooling/cmap-format/README.md. Each spec
"thread" is a task reading operations from its own queue; the main thread runs operations
inline. Events are captured by the pool's listener; log messages by a handler on the
"asyncmongo.connection" logger.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import fields
from typing import Any

from asyncmongo.core.address import Address
from asyncmongo.core.cmap.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolEvent,
    PoolReadyEvent,
)
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.core.error_policy import SYSTEM_OVERLOADED_LABEL
from asyncmongo.errors import MongoError, PoolClearedError, PoolClosedError, WaitQueueTimeoutError
from asyncmongo.runtime.pool import Pool
from tests.pool.fakes import FakeConnection

ADDRESS = ("localhost", 27017)

EVENT_TYPES: Mapping[str, type] = {
    "ConnectionPoolCreated": PoolCreatedEvent,
    "ConnectionPoolReady": PoolReadyEvent,
    "ConnectionPoolCleared": PoolClearedEvent,
    "ConnectionPoolClosed": PoolClosedEvent,
    "ConnectionCreated": ConnectionCreatedEvent,
    "ConnectionReady": ConnectionReadyEvent,
    "ConnectionClosed": ConnectionClosedEvent,
    "ConnectionCheckOutStarted": ConnectionCheckOutStartedEvent,
    "ConnectionCheckOutFailed": ConnectionCheckOutFailedEvent,
    "ConnectionCheckedOut": ConnectionCheckedOutEvent,
    "ConnectionCheckedIn": ConnectionCheckedInEvent,
}
EVENT_NAMES = {cls: name for name, cls in EVENT_TYPES.items()}
ERROR_TYPES: Mapping[str, type[BaseException]] = {
    "PoolClosedError": PoolClosedError,
    "PoolClearedError": PoolClearedError,
    "WaitQueueTimeoutError": WaitQueueTimeoutError,
}
OPTION_NAMES = {
    "maxPoolSize": "max_pool_size",
    "minPoolSize": "min_pool_size",
    "maxIdleTimeMS": "max_idle_time_ms",
    "maxConnecting": "max_connecting",
    "waitQueueTimeoutMS": "wait_queue_timeout_ms",
}


async def establish_fake(connection_id: int) -> FakeConnection:
    await asyncio.sleep(0)
    return FakeConnection(connection_id)


def pool_options(spec: Mapping[str, Any]) -> tuple[PoolOptions, float | None]:
    """PoolOptions and the maintenance interval from a test's ``poolOptions``."""
    kwargs = {OPTION_NAMES[k]: v for k, v in spec.items() if k in OPTION_NAMES}
    interval_ms = spec.get("backgroundThreadIntervalMS")
    interval: float | None = 0.5
    if interval_ms is not None:
        interval = None if interval_ms < 0 else interval_ms / 1000
    return PoolOptions(**kwargs), interval


def event_as_spec(event: PoolEvent) -> dict[str, Any]:
    """An event under the spec test's field names."""
    out: dict[str, Any] = {"type": EVENT_NAMES[type(event)]}
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name == "address":
            host, port = value
            out["address"] = f"{host}:{port}"
        elif f.name == "connection_id":
            out["connectionId"] = value
        elif f.name == "duration_ms":
            out["duration"] = value
        elif f.name == "reason":
            out["reason"] = value.value
        elif f.name == "options":
            out["options"] = dict(value)
        elif f.name == "service_id":
            out["serviceId"] = value
        elif f.name == "interrupt_in_use_connections":
            out["interruptInUseConnections"] = value
    return out


def assert_matches(actual: Any, expected: Any, path: str = "") -> None:
    """The spec's MATCH: ``expected`` is a subset of ``actual``; 42 / "42" mean "any value"."""
    if expected == 42 or expected == "42":
        assert actual is not None, f"{path}: expected a value, got none"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a document, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key}: missing in {actual!r}"
            assert_matches(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: expected an array, got {actual!r}"
        for idx, value in enumerate(expected):
            assert idx < len(actual), f"{path}[{idx}]: missing"
            assert_matches(actual[idx], value, f"{path}[{idx}]")
    else:
        assert type(actual) is type(expected) and actual == expected, (
            f"{path}: expected {expected!r}, got {actual!r}"
        )


class EventLog:
    """The captured events, with a way to wait until some type has been seen N times."""

    def __init__(self) -> None:
        self.events: list[PoolEvent] = []
        self._changed = asyncio.Event()

    def append(self, event: PoolEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(self, cls: type, count: int) -> None:
        while sum(isinstance(e, cls) for e in self.events) < count:
            self._changed.clear()
            await self._changed.wait()


class _Thread:
    """A spec thread: a task running queued operations until the first error."""

    def __init__(self, runner: CmapRunner, name: str) -> None:
        self.queue: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue()
        self.error: BaseException | None = None
        self.task = asyncio.get_running_loop().create_task(self._run(runner), name=name)

    async def _run(self, runner: CmapRunner) -> None:
        while (operation := await self.queue.get()) is not None:
            if self.error is not None:
                continue
            try:
                await runner.run_operation(operation)
            except Exception as exc:
                self.error = exc


class CmapRunner:
    """Runs one cmap-format test file against a real ``Pool``.

    Unit tests use fake connections; integration tests pass an ``establish`` that opens real
    connections to ``address`` (see spec_tests/support/cmap_integration.py).
    """

    def __init__(
        self,
        test: Mapping[str, Any],
        establish: Callable[[int], Coroutine[Any, Any, Any]] = establish_fake,
        clear_on_background_error: bool = False,
        address: Address = ADDRESS,
    ) -> None:
        """``clear_on_background_error`` plays SDAM: a filler's error clears the pool."""
        self.test = test
        self.log = EventLog()
        self.events = self.log.events
        self.labels: dict[str, Any] = {}
        self.checked_out: list[Any] = []
        self.threads: dict[str, _Thread] = {}
        options, interval = pool_options(test.get("poolOptions", {}))
        self.pool: Pool[Any] = Pool(
            address,
            options,
            establish,
            listener=self.log.append,
            maintenance_interval=interval,
            on_background_error=self._sdam if clear_on_background_error else None,
        )

    def _sdam(self, error: BaseException) -> None:
        # SDAM: handle a pre-handshake error; backpressure-labelled errors leave the pool be
        if isinstance(error, MongoError) and error.has_error_label(SYSTEM_OVERLOADED_LABEL):
            return
        self.pool.clear(cause=error)

    async def run(self) -> None:
        error: BaseException | None = None
        try:
            for operation in self.test["operations"]:
                await self.dispatch(operation)
        except Exception as exc:
            error = exc
        actual = [
            event_as_spec(e)
            for e in self.events
            if EVENT_NAMES[type(e)] not in self.test.get("ignore", [])
        ]
        await self.cleanup()
        self.check_error(error)
        for idx, expected in enumerate(self.test["events"]):
            assert idx < len(actual), f"event {idx} missing: {expected} (got {actual})"
            assert_matches(actual[idx], expected, f"events[{idx}]")

    def check_error(self, error: BaseException | None) -> None:
        expected = self.test.get("error")
        if expected is None:
            if error is not None:
                raise error
            return
        assert error is not None, f"expected {expected['type']}, nothing was raised"
        assert isinstance(error, ERROR_TYPES[expected["type"]]), repr(error)
        # The spec's messages are a prefix of ours (ours also name the pool's address).
        assert str(error).lower().startswith(expected["message"].lower()), str(error)

    async def cleanup(self) -> None:
        for thread in self.threads.values():
            thread.task.cancel()
        await asyncio.gather(*(t.task for t in self.threads.values()), return_exceptions=True)
        await self.pool.close()
        # Connections still checked out are the test's to close (the pool closes them only
        # on check-in).
        await asyncio.gather(*(c.aclose() for c in self.checked_out if not c.is_closed))

    async def dispatch(self, operation: Mapping[str, Any]) -> None:
        thread = operation.get("thread")
        if thread is None:
            await self.run_operation(operation)
        else:
            self.threads[thread].queue.put_nowait(operation)

    async def run_operation(self, op: Mapping[str, Any]) -> None:
        name = op["name"]
        if name == "start":
            self.threads[op["target"]] = _Thread(self, op["target"])
        elif name == "wait":
            await asyncio.sleep(op["ms"] / 1000)
        elif name == "waitForThread":
            thread = self.threads[op["target"]]
            thread.queue.put_nowait(None)
            await thread.task
            if thread.error is not None:
                raise thread.error
        elif name == "waitForEvent":
            await self.wait_for_event(op["event"], op["count"], op.get("timeout", 10_000))
        elif name == "checkOut":
            conn = await self.pool.check_out()
            self.checked_out.append(conn)
            if "label" in op:
                self.labels[op["label"]] = conn
        elif name == "checkIn":
            self.pool.check_in(self.labels[op["connection"]])
        elif name == "clear":
            self.pool.clear(interrupt_in_use_connections=op.get("interruptInUseConnections", False))
        elif name == "close":
            await self.pool.close()
        elif name == "ready":
            self.pool.ready()
        else:
            raise AssertionError(f"unknown operation {name!r}")

    async def wait_for_event(self, name: str, count: int, timeout_ms: float) -> None:
        cls = EVENT_TYPES[name]
        async with asyncio.timeout(timeout_ms / 1000):
            await self.log.wait_for(cls, count)


class LogCapture(logging.Handler):
    """Collects the structured fields of the pool's log messages."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[int, Mapping[str, Any]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append((record.levelno, getattr(record.msg, "fields", {})))
