"""The asyncio Pool over fake connections: behaviour, events, log messages, background task."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest

from asyncmongo.core.cmap.book import PoolState
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
from asyncmongo.core.cmap.log_messages import LogMessage
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.errors import (
    AutoReconnect,
    InvalidOperation,
    NetworkTimeout,
    OperationFailure,
    PoolClearedError,
    PoolClosedError,
    WaitQueueTimeoutError,
)
from asyncmongo.runtime.pool import Pool
from tests.pool.fakes import ADDRESS, FakeConnection, FakeServer, yields


def make_pool(
    server: FakeServer | None = None, *, maintenance_interval: float | None = 10.0, **options: Any
) -> tuple[Pool[FakeConnection], list[PoolEvent], FakeServer]:
    """A paused pool with ``options`` over ``server`` (a new FakeServer by default), and the
    list its events go to."""
    server = server or FakeServer()
    events: list[PoolEvent] = []
    pool = Pool(
        ADDRESS,
        PoolOptions(**options),
        server.establish,
        listener=events.append,
        maintenance_interval=maintenance_interval,
    )
    return pool, events, server


def kinds(events: list[PoolEvent]) -> list[str]:
    return [type(e).__name__.removesuffix("Event") for e in events]


async def test_repr_and_statistics_summarise_the_state() -> None:
    pool, _, _ = make_pool(max_pool_size=3)
    assert repr(pool) == "Pool(a:27017 paused: 0 in use, 0 idle, 0 connecting, 0 waiting, gen 0)"
    pool.ready()
    a, b, c = [await pool.check_out() for _ in range(3)]
    waiter = asyncio.create_task(pool.check_out())
    await yields(2)
    assert repr(pool) == "Pool(a:27017 ready: 3 in use, 0 idle, 0 connecting, 1 waiting, gen 0)"
    pool.check_in(a)
    assert (await waiter) is a
    for conn in (a, b, c):
        pool.check_in(conn)
    stats = pool.statistics()
    assert (stats.state, stats.idle, stats.in_use, stats.total) == (PoolState.READY, 3, 0, 3)
    await pool.close()
    assert repr(pool).startswith("Pool(a:27017 closed: 0 in use, 0 idle")


async def test_checkout_events_in_spec_order() -> None:
    pool, events, _ = make_pool()
    pool.ready()
    conn = await pool.check_out()
    pool.check_in(conn)
    await pool.close()
    assert kinds(events) == [
        "PoolCreated",
        "PoolReady",
        "ConnectionCheckOutStarted",
        "ConnectionCreated",
        "ConnectionReady",
        "ConnectionCheckedOut",
        "ConnectionCheckedIn",
        "ConnectionClosed",
        "PoolClosed",
    ]
    closed = events[-2]
    assert isinstance(closed, ConnectionClosedEvent)
    assert closed.reason is ConnectionClosedReason.POOL_CLOSED
    checked_out = events[5]
    assert isinstance(checked_out, ConnectionCheckedOutEvent) and checked_out.duration_ms >= 0


async def test_checkout_context_checks_in_and_keeps_connection_on_ordinary_errors() -> None:
    pool, _, server = make_pool()
    pool.ready()
    with pytest.raises(OperationFailure):
        async with pool.checkout() as conn:
            raise OperationFailure("command failed", 2)
    assert not conn.closed and pool.statistics().idle == 1
    async with pool.checkout() as again:
        assert again is conn
    await pool.close()
    assert not server.open_connections()


async def test_a_connection_closed_by_the_peer_is_dropped_on_checkin() -> None:
    pool, events, _ = make_pool()
    pool.ready()
    async with pool.checkout() as conn:
        conn.close()  # the peer hung up mid-operation
    assert pool.statistics().total == 0
    closed = events[-1]
    assert isinstance(closed, ConnectionClosedEvent)
    assert closed.reason is ConnectionClosedReason.ERROR
    await pool.close()


async def test_checkin_of_a_foreign_connection_is_an_error() -> None:
    pool, _, _ = make_pool()
    pool.ready()
    with pytest.raises(InvalidOperation):
        pool.check_in(FakeConnection(7))
    await pool.close()


async def test_wait_queue_timeout_and_operation_deadline() -> None:
    pool, events, _ = make_pool(max_pool_size=1, wait_queue_timeout_ms=20)
    pool.ready()
    held = await pool.check_out()
    with pytest.raises(WaitQueueTimeoutError, match="a:27017"):
        await pool.check_out()
    loop = asyncio.get_running_loop()
    with pytest.raises(WaitQueueTimeoutError):
        await pool.check_out(deadline=loop.time() + 0.001)  # the tighter of the two
    failed = [e for e in events if isinstance(e, ConnectionCheckOutFailedEvent)]
    assert [e.reason for e in failed] == [ConnectionCheckOutFailedReason.TIMEOUT] * 2
    assert pool.statistics().waiting == 0
    pool.check_in(held)
    await pool.close()


async def test_timeout_errors_say_which_limit_ended_the_wait() -> None:
    # waitQueueTimeoutMS when it is the tighter limit; the operation's timeoutMS (CSOT) with
    # the phase and the time it had otherwise
    pool, _, _ = make_pool(max_pool_size=1, wait_queue_timeout_ms=20)
    pool.ready()
    held = await pool.check_out()
    loop = asyncio.get_running_loop()
    with pytest.raises(WaitQueueTimeoutError, match=r"waitQueueTimeoutMS: 20\)"):
        await pool.check_out(deadline=loop.time() + 5)
    with pytest.raises(WaitQueueTimeoutError) as info:
        await pool.check_out(deadline=loop.time() + 0.005)
    assert "within the operation's timeoutMS (phase: checkout, " in str(info.value)
    assert re.search(r"\b[0-5] ms left for it; maxPoolSize: 1\)", str(info.value))
    assert info.value.timeout
    pool.check_in(held)
    await pool.close()


async def test_a_connect_past_the_deadline_says_how_long_it_had() -> None:
    async def hangs(connection_id: int) -> FakeConnection:
        await asyncio.sleep(60)
        raise AssertionError("never connects")

    pool = Pool(ADDRESS, PoolOptions(max_pool_size=1), hangs, maintenance_interval=None)
    pool.ready()
    loop = asyncio.get_running_loop()
    with pytest.raises(NetworkTimeout) as info:
        await pool.check_out(deadline=loop.time() + 0.01)
    message = str(info.value)
    assert "did not finish within the operation's timeoutMS (phase: connect, " in message
    assert re.search(r"\b(10|9) ms left for it\)", message), message
    await pool.close()


async def test_paused_and_closed_pools_refuse_checkouts() -> None:
    pool, events, _ = make_pool()
    with pytest.raises(PoolClearedError):
        await pool.check_out()
    await pool.close()
    with pytest.raises(PoolClosedError):
        await pool.check_out()
    failed = [e for e in events if isinstance(e, ConnectionCheckOutFailedEvent)]
    assert [e.reason.value for e in failed] == ["connectionError", "poolClosed"]


async def test_clear_fails_every_waiter_with_a_retryable_error() -> None:
    pool, _, _ = make_pool(max_pool_size=1)
    pool.ready()
    held = await pool.check_out()
    waiters = [asyncio.create_task(pool.check_out()) for _ in range(3)]
    await yields(2)
    pool.clear(cause=AutoReconnect("boom"))
    for task in waiters:
        with pytest.raises(PoolClearedError, match="boom") as info:
            await task
        assert info.value.has_error_label("RetryableWriteError")
    pool.check_in(held)  # stale now: closed
    assert pool.statistics().total == 0
    with pytest.raises(PoolClearedError, match="was cleared because another operation failed"):
        await pool.check_out()  # paused until SDAM marks it ready again
    await pool.close()


async def test_clear_with_interrupt_closes_in_use_and_pending_connections() -> None:
    server = FakeServer(delay_yields=100)
    pool, events, _ = make_pool(server)
    pool.ready()
    server.delay_yields = 0
    busy = await pool.check_out()
    server.delay_yields = 100
    pending = asyncio.create_task(pool.check_out())
    await yields(3)
    assert "1 connecting" in repr(pool)
    pool.clear(interrupt_in_use_connections=True)
    assert busy.closed
    with pytest.raises(PoolClearedError, match="interrupted due to server monitor timeout"):
        await pending
    cleared = next(e for e in events if isinstance(e, PoolClearedEvent))
    assert cleared.interrupt_in_use_connections
    pool.check_in(busy)
    assert pool.statistics().total == 0
    await pool.close()


async def test_establishment_failure_releases_the_slot_and_is_reraised() -> None:
    server = FakeServer(failure_rate=1.0)
    pool, events, _ = make_pool(server, max_connecting=1)
    pool.ready()
    with pytest.raises(AutoReconnect, match="refused"):
        await pool.check_out()
    assert pool.statistics().connecting == 0
    assert kinds(events)[-3:] == [
        "ConnectionCreated",
        "ConnectionClosed",
        "ConnectionCheckOutFailed",
    ]
    closed, failed = events[-2], events[-1]
    assert isinstance(closed, ConnectionClosedEvent) and closed.reason.value == "error"
    assert isinstance(failed, ConnectionCheckOutFailedEvent)
    assert failed.reason is ConnectionCheckOutFailedReason.CONNECTION_ERROR
    assert isinstance(failed.error, AutoReconnect)
    server.failure_rate = 0.0
    pool.check_in(await pool.check_out())
    await pool.close()


async def test_a_waiter_gets_the_slot_a_failed_establishment_frees() -> None:
    server = FakeServer(delay_yields=3)
    server.fail_next = 1
    pool, _, _ = make_pool(server, max_connecting=1)
    pool.ready()
    first = asyncio.create_task(pool.check_out())
    second = asyncio.create_task(pool.check_out())
    await yields(1)
    assert "1 connecting, 1 waiting" in repr(pool)
    with pytest.raises(AutoReconnect):
        await first
    pool.check_in(await second)
    await pool.close()


async def test_min_pool_size_filler_runs_in_the_spawned_task_and_close_ends_it() -> None:
    server = FakeServer()
    events: list[PoolEvent] = []
    spawned: list[asyncio.Task[None]] = []

    def spawn(coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        spawned.append(task)
        return task

    pool = Pool(
        ADDRESS, PoolOptions(min_pool_size=3), server.establish, listener=events.append, spawn=spawn
    )
    await yields(5)
    assert pool.statistics().total == 0  # paused: no population
    pool.ready()
    await yields(10)
    assert pool.statistics().idle == 3
    assert kinds(events).index("PoolReady") < kinds(events).index("ConnectionCreated")
    (task,) = spawned
    await pool.close()
    assert task.done()
    assert not server.open_connections()


async def test_filler_errors_go_to_the_sdam_hook_before_the_close_event() -> None:
    server = FakeServer(failure_rate=1.0)
    events: list[PoolEvent] = []
    pool: Pool[FakeConnection]

    def handle_error(exc: BaseException) -> None:
        assert isinstance(exc, AutoReconnect)
        pool.clear(cause=exc)  # what SDAM does for a pre-handshake network error

    pool = Pool(
        ADDRESS,
        PoolOptions(min_pool_size=1),
        server.establish,
        listener=events.append,
        on_background_error=handle_error,
        maintenance_interval=0.01,
    )
    pool.ready()
    await yields(10)
    assert kinds(events)[1:5] == [
        "PoolReady",
        "ConnectionCreated",
        "PoolCleared",
        "ConnectionClosed",
    ]
    await asyncio.sleep(0.05)
    assert server.failures == 1  # paused after the clear: no retry storm
    await pool.close()


async def test_background_task_prunes_idle_connections() -> None:
    pool, events, _ = make_pool(max_idle_time_ms=10, maintenance_interval=0.005)
    pool.ready()
    pool.check_in(await pool.check_out())
    await asyncio.sleep(0.05)
    assert pool.statistics().idle == 0
    closed = [e for e in events if isinstance(e, ConnectionClosedEvent)]
    assert [e.reason for e in closed] == [ConnectionClosedReason.IDLE]
    await pool.close()


async def test_load_balanced_clear_keeps_the_pool_ready() -> None:
    server = FakeServer(service_id="svc-1")
    pool, events, _ = make_pool(server, load_balanced=True)
    pool.ready()
    conn = await pool.check_out()
    pool.clear(service_id="svc-1")
    assert pool.state is PoolState.READY
    cleared = next(e for e in events if isinstance(e, PoolClearedEvent))
    assert cleared.service_id == "svc-1"
    pool.check_in(conn)
    assert conn.closed  # stale for its service
    other = await pool.check_out()
    assert other is not conn
    pool.check_in(other)
    await pool.close()


async def test_a_failing_listener_does_not_break_the_pool(caplog: pytest.LogCaptureFixture) -> None:
    def listener(event: PoolEvent) -> None:
        raise RuntimeError("listener bug")

    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(), server.establish, listener=listener)
    pool.ready()
    pool.check_in(await pool.check_out())
    await pool.close()
    assert "listener bug" in caplog.text


async def test_log_messages_for_a_checkout_cycle(caplog: pytest.LogCaptureFixture) -> None:
    # The message sequence of logging/connection-logging.json's first test, at pool level.
    caplog.set_level(logging.DEBUG, logger="asyncmongo.connection")
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(max_pool_size=5), server.establish)
    pool.ready()
    for _ in range(2):
        pool.check_in(await pool.check_out())
    await pool.close()
    records = [r for r in caplog.records if r.name == "asyncmongo.connection"]
    assert all(isinstance(r.msg, LogMessage) for r in records)
    fields = [r.msg.fields for r in records if isinstance(r.msg, LogMessage)]
    assert [f["message"] for f in fields] == [
        "Connection pool created",
        "Connection pool ready",
        "Connection checkout started",
        "Connection created",
        "Connection ready",
        "Connection checked out",
        "Connection checked in",
        "Connection checkout started",
        "Connection checked out",
        "Connection checked in",
        "Connection closed",
        "Connection pool closed",
    ]
    assert all(r.levelno == logging.DEBUG for r in records)
    assert all(f["serverHost"] == "a" and f["serverPort"] == 27017 for f in fields)
    assert fields[0]["maxPoolSize"] == 5
    assert isinstance(fields[4]["durationMS"], float) and fields[4]["driverConnectionId"] == 1
    assert fields[10]["reason"] == "Connection pool was closed"
    assert "error" not in fields[10]
    assert str(records[3].msg) == "Connection created: address=a:27017, driver-generated ID=1"


async def test_no_events_are_built_when_nobody_listens(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="asyncmongo.connection")
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(), server.establish)
    pool.ready()
    pool.check_in(await pool.check_out())
    await pool.close()
    assert not [r for r in caplog.records if r.name == "asyncmongo.connection"]


def test_every_event_type_has_a_log_message() -> None:
    from asyncmongo.core.cmap.log_messages import log_message

    address = ("h", 1)
    samples: list[PoolEvent] = [
        PoolCreatedEvent(address, {"minPoolSize": 1}),
        PoolReadyEvent(address),
        PoolClearedEvent(address, service_id="abc"),
        PoolClosedEvent(address),
        ConnectionCreatedEvent(address, 1),
        ConnectionReadyEvent(address, 1, 1.5),
        ConnectionClosedEvent(address, 1, ConnectionClosedReason.ERROR, AutoReconnect("x")),
        ConnectionCheckOutStartedEvent(address),
        ConnectionCheckOutFailedEvent(
            address, ConnectionCheckOutFailedReason.CONNECTION_ERROR, 2.0, AutoReconnect("y")
        ),
        ConnectionCheckedOutEvent(address, 1, 0.5),
        ConnectionCheckedInEvent(address, 1),
    ]
    texts = [str(log_message(e)) for e in samples]
    assert texts[0] == "Connection pool created for h:1 using options minPoolSize=1"
    assert texts[2] == "Connection pool for h:1 cleared for serviceId abc"
    assert log_message(samples[2]).fields["serviceId"] == "abc"
    assert texts[6].endswith(
        "Reason: An error occurred while using the connection. Error: AutoReconnect: x"
    )
    assert log_message(samples[8]).fields["error"] == "AutoReconnect: y"
    unix = log_message(PoolReadyEvent(("/tmp/mongodb-27017.sock", None)))
    assert "serverPort" not in unix.fields


async def test_the_filler_can_live_in_the_clients_task_set() -> None:
    from asyncmongo.runtime.tasks import TaskSet

    tasks = TaskSet(asyncio.get_running_loop())
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(min_pool_size=1), server.establish, spawn=tasks.spawn)
    pool.ready()
    await yields(5)
    assert len(tasks) == 1 and pool.statistics().idle == 1
    await pool.close()
    assert len(tasks) == 0  # ended and awaited by close(), not left to the task set
    await tasks.close()


async def test_generation_of_a_checked_out_connection_follows_clears() -> None:
    pool, _, _ = make_pool()
    pool.ready()
    old = await pool.check_out()
    assert pool.generation_of(old) == 0
    pool.clear()
    pool.ready()
    new = await pool.check_out()
    assert (pool.generation_of(old), pool.generation_of(new)) == (0, 1)
    with pytest.raises(InvalidOperation):
        pool.generation_of(FakeConnection(old.id))  # same id, not the checked-out one
    pool.check_in(old)
    with pytest.raises(InvalidOperation):
        pool.generation_of(old)
    pool.check_in(new)
    await pool.close()


async def test_an_unobserved_pool_logs_once_the_logger_is_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No listener: checkout and check-in build no events until the CMAP logger is at DEBUG,
    and then log them (the observation is decided on every checkout and check-in)."""
    server = FakeServer()
    pool: Pool[FakeConnection] = Pool(ADDRESS, PoolOptions(), server.establish)
    pool.ready()
    conn = await pool.check_out()
    pool.check_in(conn)
    assert not [r for r in caplog.records if r.name == "asyncmongo.connection"]
    with caplog.at_level(logging.DEBUG, logger="asyncmongo.connection"):
        conn = await pool.check_out()
        pool.check_in(conn)
    messages = [r.getMessage() for r in caplog.records if r.name == "asyncmongo.connection"]
    assert len(messages) == 3
    assert messages[0].startswith("Checkout started for connection")
    assert "Connection checked out" in messages[1]
    assert "Connection checked in" in messages[2]
    await pool.close()


async def test_try_check_out_takes_an_idle_connection_only_when_unobserved_and_free(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """try_check_out: check_out's non-waiting, unobserved path; None sends the caller to
    check_out (which publishes the events)."""
    server = FakeServer()
    pool: Pool[FakeConnection] = Pool(ADDRESS, PoolOptions(max_pool_size=1), server.establish)
    assert pool.try_check_out() is None  # paused
    pool.ready()
    assert pool.try_check_out() is None  # nothing idle: check_out opens one
    conn = await pool.check_out()
    pool.check_in(conn)
    assert pool.try_check_out() is conn
    assert pool.try_check_out() is None  # in use
    pool.check_in(conn)
    with caplog.at_level(logging.DEBUG, logger="asyncmongo.connection"):
        assert pool.try_check_out() is None  # logged: check_out's job
    events: list[PoolEvent] = []
    pool.observe(events.append)
    assert pool.try_check_out() is None and not events
    pool.observe(None)
    conn.closed = True  # perished while idle: closed, nothing to hand out
    assert pool.try_check_out() is None
    assert pool.statistics().total == 0 and pool.statistics().in_use == 0
    await pool.close()


async def test_try_check_out_does_not_overtake_a_waiter() -> None:
    """White box: a queued checkout and an idle connection at once only happen between a
    check-in and the queue being served, so the queue is filled by hand."""
    server = FakeServer()
    pool: Pool[FakeConnection] = Pool(ADDRESS, PoolOptions(), server.establish)
    pool.ready()
    conn = await pool.check_out()
    pool.check_in(conn)
    waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    pool._book.waiters.append(waiter)
    assert pool.try_check_out() is None
    pool._book.waiters.clear()
    assert pool.try_check_out() is conn
    pool.check_in(conn)
    await pool.close()


async def test_the_unobserved_fast_paths_follow_every_logging_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """try_check_out and check_in read the logger's own isEnabledFor cache: a parent's level,
    ``Logger.disabled`` and ``logging.disable`` changed at runtime are honoured at once."""
    logger = logging.getLogger("asyncmongo.connection")
    parent = logging.getLogger("asyncmongo")
    saved = (logger.level, logger.disabled, parent.level, logging.root.manager.disable)
    caplog.set_level(logging.NOTSET)

    def records() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == logger.name]

    logger.setLevel(logging.INFO)
    server = FakeServer()
    pool: Pool[FakeConnection] = Pool(ADDRESS, PoolOptions(), server.establish)
    pool.ready()
    try:
        conn = await pool.check_out()
        pool.check_in(conn)  # caches "DEBUG off"
        assert pool.try_check_out() is conn
        pool.check_in(conn)
        assert not records()
        logger.setLevel(logging.NOTSET)
        parent.setLevel(logging.DEBUG)  # the child's effective level: DEBUG
        assert pool.try_check_out() is None
        conn = await pool.check_out()
        pool.check_in(conn)
        assert len(records()) == 3 and "Connection checked in" in records()[-1]
        caplog.clear()
        logger.disabled = True  # the cache still says DEBUG: isEnabledFor says no
        assert pool.try_check_out() is conn
        pool.check_in(conn)
        logger.disabled = False
        logging.disable(logging.DEBUG)
        assert pool.try_check_out() is conn
        pool.check_in(conn)
        assert not records()
        logging.disable(logging.NOTSET)
        assert pool.try_check_out() is None
        pool.check_in(await pool.check_out())
        assert len(records()) == 3
    finally:
        logger.setLevel(saved[0])
        logger.disabled = saved[1]
        parent.setLevel(saved[2])
        logging.disable(saved[3])
        await pool.close()


async def test_try_check_out_perishes_a_connection_idle_too_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """maxIdleTimeMS on the checkout fast path: an idle connection within it is taken, one
    past it is closed (reason idle) and none is handed out."""
    now = [100.0]
    monkeypatch.setattr("asyncmongo.runtime.pool._monotonic", lambda: now[0])
    pool, events, _ = make_pool(max_idle_time_ms=1000, maintenance_interval=None)
    pool.ready()
    conn = await pool.check_out()
    pool.check_in(conn)
    pool.observe(None)
    now[0] += 0.9
    assert pool.try_check_out() is conn
    pool.check_in(conn)
    now[0] += 0.9  # 1.8 s since the first check-in, 0.9 s since the last one
    assert pool.try_check_out() is conn
    pool.check_in(conn)
    now[0] += 1.1
    assert pool.try_check_out() is None
    assert conn.closed and pool.statistics().total == 0
    pool.observe(events.append)
    events.clear()
    await pool.close()
    assert [type(e) for e in events] == [PoolClosedEvent]
