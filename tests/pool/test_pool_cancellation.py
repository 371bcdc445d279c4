"""Cancellation of the pool at every await point, and a 10,000-operation random schedule.

Each await in ``Pool`` has a test: a checkout cancelled while queued, while waiting for a
maxConnecting slot, while establishing (and just as establishment succeeds), and an operation
cancelled while holding a connection. The property test then cancels random checkouts and
operations at random points against random pools and checks that nothing drifted.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import pytest

from asyncmongo.core.cmap.events import PoolEvent
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.errors import AutoReconnect, PoolClearedError, WaitQueueTimeoutError
from asyncmongo.runtime.pool import Pool
from tests.pool.fakes import ADDRESS, FakeConnection, FakeServer, yields


def assert_quiet(pool: Pool[FakeConnection], server: FakeServer) -> None:
    """No holder left: nothing in use, connecting or waiting; fakes agree with the books."""
    stats = pool.statistics()
    assert (stats.in_use, stats.connecting, stats.waiting) == (0, 0, 0), repr(pool)
    assert stats.total == stats.idle
    assert len(server.open_connections()) == stats.idle, repr(pool)


async def test_cancel_while_queued_leaves_the_queue() -> None:
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(max_pool_size=1), server.establish)
    pool.ready()
    held = await pool.check_out()
    waiter = asyncio.create_task(pool.check_out())
    await yields(3)
    assert "1 waiting" in repr(pool)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert "0 waiting" in repr(pool)
    pool.check_in(held)
    assert_quiet(pool, server)
    await pool.close()


async def test_cancel_after_being_granted_returns_the_connection() -> None:
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(max_pool_size=1), server.establish)
    pool.ready()
    held = await pool.check_out()
    waiter = asyncio.create_task(pool.check_out())
    await yields(3)
    pool.check_in(held)  # hands the connection to the waiter's future...
    waiter.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert_quiet(pool, server)
    assert pool.statistics().idle == 1
    await pool.close()


async def test_cancel_while_waiting_for_a_connecting_slot() -> None:
    server = FakeServer(delay_yields=50)
    pool = Pool(ADDRESS, PoolOptions(max_connecting=1), server.establish)
    pool.ready()
    first = asyncio.create_task(pool.check_out())
    second = asyncio.create_task(pool.check_out())
    await yields(3)
    assert "1 connecting, 1 waiting" in repr(pool)
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    pool.check_in(await first)
    assert_quiet(pool, server)
    await pool.close()


async def test_cancel_while_establishing_releases_the_slot() -> None:
    server = FakeServer(delay_yields=50)
    events: list[PoolEvent] = []
    pool = Pool(ADDRESS, PoolOptions(max_connecting=1), server.establish, listener=events.append)
    pool.ready()
    task = asyncio.create_task(pool.check_out())
    await yields(3)
    assert "1 connecting" in repr(pool)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_quiet(pool, server)
    names = [type(e).__name__ for e in events]
    assert names[-2:] == ["ConnectionClosedEvent", "ConnectionCheckOutFailedEvent"]
    assert server.cancelled_establishments == 1
    pool.check_in(await pool.check_out())  # the slot is free again
    await pool.close()


async def test_cancel_just_as_establishment_succeeds_keeps_the_connection() -> None:
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(), server.establish)
    pool.ready()
    task = asyncio.create_task(pool.check_out())
    # Let establishment finish (its task completes) but cancel the checkout before it resumes.
    for _ in range(10):
        await asyncio.sleep(0)
        if server.created:
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_quiet(pool, server)
    await pool.close()
    assert not server.open_connections()


async def test_operation_cancelled_while_holding_discards_the_connection() -> None:
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(), server.establish)
    pool.ready()
    started = asyncio.Event()

    async def operation() -> None:
        async with pool.checkout():
            started.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(operation())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_quiet(pool, server)
    assert server.created[0].closed  # may be mid-message: never reused
    await pool.close()


async def test_close_cancelled_still_finishes_cleanup() -> None:
    server = FakeServer(close_yields=5)
    pool = Pool(ADDRESS, PoolOptions(min_pool_size=2), server.establish, maintenance_interval=1)
    pool.ready()
    await yields(20)
    assert pool.statistics().idle == 2
    closer = asyncio.create_task(pool.close())
    await asyncio.sleep(0)
    closer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closer
    for _ in range(20):
        await asyncio.sleep(0)
    assert not server.open_connections()


# -- the property test ------------------------------------------------------------------------

OPERATIONS = 10_000
BATCH = 500
EXPECTED = (
    WaitQueueTimeoutError,
    PoolClearedError,
    AutoReconnect,
    asyncio.CancelledError,
)


async def _batch(rng: random.Random) -> Counter[str]:
    options = PoolOptions(
        max_pool_size=rng.choice([0, 1, 2, 5, 10]),
        max_connecting=rng.choice([1, 2, 3]),
        wait_queue_timeout_ms=rng.choice([0, 0, 0, 20]),
    )
    server = FakeServer(rng=rng, failure_rate=0.1, delay_yields=4)
    counts: Counter[str] = Counter()

    def listener(event: PoolEvent) -> None:
        counts[type(event).__name__] += 1

    pool = Pool(ADDRESS, options, server.establish, listener=listener)
    pool.ready()
    holders: set[int] = set()
    loop = asyncio.get_running_loop()

    async def operation() -> None:
        deadline = None if rng.random() < 0.9 else loop.time() + rng.choice([0.0, 0.002])
        async with pool.checkout(deadline) as conn:
            assert conn.id not in holders
            holders.add(conn.id)
            try:
                await yields(rng.randint(0, 6))
            except asyncio.CancelledError:
                counts["cancelled while holding"] += 1
                raise
            finally:
                holders.discard(conn.id)
        stats = pool.statistics()
        assert options.max_pool_size == 0 or stats.total <= options.max_pool_size
        assert stats.connecting <= options.max_connecting

    async def cancel_later(task: asyncio.Task[Any], after: int) -> None:
        await yields(after)
        task.cancel()

    async def chaos() -> None:
        for _ in range(rng.choice([0, 0, 1, 2])):
            await yields(rng.randint(1, 300))
            pool.clear(interrupt_in_use_connections=rng.random() < 0.5)
            await yields(rng.randint(0, 5))
            pool.ready()

    tasks = [asyncio.create_task(operation()) for _ in range(BATCH)]
    helpers = [
        asyncio.create_task(cancel_later(t, rng.randint(0, 12)))
        for t in tasks
        if rng.random() < 0.3
    ]
    helpers.append(asyncio.create_task(chaos()))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*helpers)
    for result in results:
        if isinstance(result, BaseException):
            assert isinstance(result, EXPECTED), repr(result)
            counts[f"raised {type(result).__name__}"] += 1
        else:
            counts["completed"] += 1

    pool.ready()
    assert not holders
    assert_quiet(pool, server)
    assert counts["ConnectionCheckOutStartedEvent"] == BATCH
    assert counts["ConnectionCheckedOutEvent"] + counts["ConnectionCheckOutFailedEvent"] == BATCH
    assert counts["ConnectionCheckedOutEvent"] == counts["ConnectionCheckedInEvent"]
    open_now = len(server.open_connections())
    assert counts["ConnectionCreatedEvent"] == counts["ConnectionClosedEvent"] + open_now
    await pool.close()
    assert not server.open_connections()
    counts["cancelled while connecting"] = server.cancelled_establishments
    return counts


@pytest.mark.timeout(60)
async def test_random_cancellations_never_skew_the_pool() -> None:
    rng = random.Random(20261121)
    totals: Counter[str] = Counter()
    for _ in range(OPERATIONS // BATCH):
        totals += await _batch(rng)
    # The schedule really exercised every path.
    assert totals["completed"] > 1000
    for outcome in ("CancelledError", "WaitQueueTimeoutError", "PoolClearedError"):
        assert totals[f"raised {outcome}"] > 50, totals
    assert totals["raised AutoReconnect"] > 10, totals
    assert totals["cancelled while holding"] > 0, totals
    assert totals["cancelled while connecting"] > 0, totals


async def test_close_while_the_filler_is_establishing_cancels_it_cleanly() -> None:
    server = FakeServer(delay_yields=100)
    events: list[PoolEvent] = []
    pool = Pool(
        ADDRESS,
        PoolOptions(min_pool_size=2),
        server.establish,
        listener=events.append,
        maintenance_interval=1,
    )
    pool.ready()
    await yields(3)
    assert "2 connecting" in repr(pool)
    await pool.close()
    assert server.cancelled_establishments == 2
    assert pool.statistics().connecting == 0
    assert not server.open_connections()
    names = [type(e).__name__ for e in events]
    assert names.count("ConnectionCreatedEvent") == names.count("ConnectionClosedEvent") == 2


async def test_a_grant_overtaken_by_clear_is_returned_and_the_checkout_fails() -> None:
    server = FakeServer()
    pool = Pool(ADDRESS, PoolOptions(max_pool_size=1), server.establish)
    pool.ready()
    held = await pool.check_out()
    waiter = asyncio.create_task(pool.check_out())
    await yields(3)
    pool.check_in(held)  # granted to the waiter...
    pool.clear()  # ...but the pool is cleared before the waiter runs
    with pytest.raises(PoolClearedError):
        await waiter
    assert_quiet(pool, server)
    assert pool.statistics().total == 0  # the stale connection was closed, not kept
    await pool.close()
