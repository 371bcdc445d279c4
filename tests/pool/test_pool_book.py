"""The pure pool bookkeeping: decisions with no event loop."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.core.cmap.book import PERMIT, PoolBook, PoolState
from asyncmongo.core.cmap.events import ConnectionClosedReason
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.errors import ConfigurationError, InvalidOperation
from tests.pool.fakes import ADDRESS, FakeConnection


def never(waiter: str) -> bool:
    return False


def make_book(**options: Any) -> PoolBook[FakeConnection, str]:
    book: PoolBook[FakeConnection, str] = PoolBook(ADDRESS, PoolOptions(**options))
    book.mark_ready()
    return book


def open_connection(
    book: PoolBook[FakeConnection, str], service_id: object = None
) -> FakeConnection:
    assert book.can_create()
    book.reserve()
    conn_id, generation = book.next_connection_id()
    conn = FakeConnection(conn_id, service_id)
    book.connected(conn, generation)
    return conn


def test_starts_paused_and_readies_once() -> None:
    book: PoolBook[FakeConnection, str] = PoolBook(ADDRESS, PoolOptions())
    assert book.state is PoolState.PAUSED
    assert not book.can_create()
    assert book.mark_ready()
    assert not book.mark_ready()


def test_idle_connections_are_reused_most_recent_first() -> None:
    book = make_book()
    a, b = open_connection(book), open_connection(book)
    assert book.check_in(a, now=1.0) is None
    assert book.check_in(b, now=2.0) is None
    assert book.take_idle(now=3.0) is b
    assert book.take_idle(now=3.0) is a
    assert book.take_idle(now=3.0) is None


def test_perished_idle_connections_are_closed_at_checkout() -> None:
    book = make_book(max_idle_time_ms=1000)
    old, peer_closed, fresh = (open_connection(book) for _ in range(3))
    book.check_in(old, now=0.0)
    book.check_in(fresh, now=9.5)
    book.check_in(peer_closed, now=9.6)
    peer_closed.close()
    assert book.take_idle(now=10.0) is fresh
    assert book.closing == [(peer_closed, ConnectionClosedReason.ERROR)]
    book.closing.clear()
    assert book.take_idle(now=10.0) is None
    assert book.closing == [(old, ConnectionClosedReason.IDLE)]
    assert book.total == 1


def test_max_pool_size_and_max_connecting_bound_creation() -> None:
    book = make_book(max_pool_size=3, max_connecting=2)
    book.reserve()
    book.reserve()
    assert not book.can_create()  # maxConnecting
    book.release()
    open_connection(book)
    open_connection(book)
    assert book.total == 3
    assert not book.can_create()  # maxPoolSize


def test_max_pool_size_zero_is_unlimited() -> None:
    book = make_book(max_pool_size=0, max_connecting=1000)
    for _ in range(500):
        open_connection(book)
    assert book.can_create()


def test_assign_serves_waiters_in_order_and_stops_at_the_first_unservable() -> None:
    book = make_book(max_pool_size=2, max_connecting=1)
    conn = open_connection(book)
    book.check_in(conn, now=0.0)
    book.waiters.extend(["w1", "w2", "w3"])
    grants = book.assign(now=1.0, abandoned=never)
    # w1 takes the idle connection, w2 the one connecting slot, w3 must wait.
    assert grants == [("w1", conn), ("w2", PERMIT)]
    assert list(book.waiters) == ["w3"]
    assert book.pending == 1


def test_assign_skips_abandoned_waiters() -> None:
    book = make_book()
    book.waiters.extend(["gone", "w2"])
    grants = book.assign(now=0.0, abandoned=lambda w: w == "gone")
    assert grants == [("w2", PERMIT)]


def test_clear_pauses_fails_waiters_and_closes_idle_at_once() -> None:
    book = make_book()
    idle, busy = open_connection(book), open_connection(book)
    book.check_in(idle, now=0.0)
    book.waiters.append("w")
    decision = book.clear(interrupt_in_use=False)
    assert decision.emit_event and decision.failed_waiters == ("w",)
    assert decision.interrupt == ()
    assert book.state is PoolState.PAUSED and book.generation == 1
    assert book.closing == [(idle, ConnectionClosedReason.STALE)]
    assert book.check_in(busy, now=1.0) is ConnectionClosedReason.STALE
    assert book.total == 0


def test_clearing_a_paused_pool_bumps_the_generation_silently() -> None:
    book = make_book()
    assert book.clear().emit_event
    decision = book.clear()
    assert not decision.emit_event
    assert book.generation == 2


def test_clear_interrupts_in_use_connections_only_when_asked() -> None:
    book = make_book()
    busy = open_connection(book)
    assert book.clear(interrupt_in_use=False).interrupt == ()
    book.mark_ready()
    fresh = open_connection(book)
    assert book.clear(interrupt_in_use=True).interrupt == (busy, fresh)


def test_close_fails_waiters_and_closes_idle() -> None:
    book = make_book()
    idle, busy = open_connection(book), open_connection(book)
    book.check_in(idle, now=0.0)
    book.waiters.append("w")
    assert book.close() == ("w",)
    assert book.close() is None
    assert book.closing == [(idle, ConnectionClosedReason.POOL_CLOSED)]
    assert book.check_in(busy, now=0.0) is ConnectionClosedReason.POOL_CLOSED
    assert not book.can_create()


def test_check_in_of_a_foreign_connection_is_refused() -> None:
    book = make_book()
    conn = open_connection(book)
    with pytest.raises(InvalidOperation):
        book.check_in(FakeConnection(conn.id), now=0.0)
    with pytest.raises(InvalidOperation):
        book.check_in(FakeConnection(99), now=0.0)
    assert book.check_in(conn, now=0.0) is None
    with pytest.raises(InvalidOperation):
        book.check_in(conn, now=0.0)  # twice


def test_reserve_for_min_size_respects_max_connecting_and_state() -> None:
    book = make_book(min_pool_size=5, max_connecting=2)
    assert book.reserve_for_min_size() == 2
    assert book.reserve_for_min_size() == 0
    book.clear()
    book.release()
    book.release()
    assert book.reserve_for_min_size() == 0  # paused


def test_prune_closes_idle_connections_past_max_idle_time() -> None:
    book = make_book(max_idle_time_ms=500)
    a, b = open_connection(book), open_connection(book)
    book.check_in(a, now=0.0)
    book.check_in(b, now=1.0)
    book.prune(now=1.2)
    assert book.closing == [(a, ConnectionClosedReason.IDLE)]
    assert book.statistics().idle == 1


def test_load_balanced_clear_is_per_service_and_keeps_the_queue() -> None:
    book = make_book(load_balanced=True)
    a1, a2, b1 = (open_connection(book, sid) for sid in ("A", "A", "B"))
    assert book.service_generations == {"A": [0, 2], "B": [0, 1]}
    book.check_in(a1, now=0.0)
    book.waiters.append("w")
    decision = book.clear(service_id="A")
    assert decision.emit_event and decision.failed_waiters == ()
    assert book.state is PoolState.READY and list(book.waiters) == ["w"]
    assert book.closing == [(a1, ConnectionClosedReason.STALE)]
    assert book.check_in(a2, now=0.0) is ConnectionClosedReason.STALE
    assert book.check_in(b1, now=0.0) is None
    assert book.service_generations == {"B": [0, 1]}  # A's count reached 0: entry removed
    a3 = open_connection(book, "A")
    assert book.check_in(a3, now=0.0) is None


def test_statistics_and_summary() -> None:
    book = make_book(max_pool_size=10)
    a, _b = open_connection(book), open_connection(book)
    book.check_in(a, now=0.0)
    book.reserve()
    book.waiters.append("w")
    stats = book.statistics()
    assert (stats.total, stats.in_use, stats.idle, stats.connecting, stats.waiting) == (
        3,
        1,
        1,
        1,
        1,
    )
    assert stats.summary() == "a:27017 ready: 1 in use, 1 idle, 1 connecting, 1 waiting, gen 0"


@pytest.mark.parametrize(
    "options",
    [
        {"max_pool_size": -1},
        {"min_pool_size": -1},
        {"min_pool_size": 5, "max_pool_size": 2},
        {"max_idle_time_ms": -1},
        {"max_connecting": 0},
        {"wait_queue_timeout_ms": -5},
    ],
)
def test_invalid_options_raise_configuration_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        PoolOptions(**options)


def test_non_default_options_use_the_spec_names() -> None:
    options = PoolOptions(max_pool_size=50, min_pool_size=5, max_idle_time_ms=100)
    assert options.non_default() == {"maxPoolSize": 50, "minPoolSize": 5, "maxIdleTimeMS": 100}
    assert PoolOptions().non_default() == {}


def test_generations_tell_sdam_which_errors_are_stale() -> None:
    book = make_book()
    conn = open_connection(book)
    assert book.generation_of(conn) == 0
    assert not book.is_stale_generation(0)
    book.clear()
    assert book.is_stale_generation(book.generation_of(conn))
    with pytest.raises(InvalidOperation):
        book.generation_of(FakeConnection(42))


def test_load_balanced_generations_are_per_service() -> None:
    book = make_book(load_balanced=True)
    a, b = open_connection(book, "A"), open_connection(book, "B")
    book.clear(service_id="A")
    assert book.generation_of(a) == 0 and book.is_stale_generation(0, "A")
    assert not book.is_stale_generation(book.generation_of(b), "B")


def test_connections_of_the_generation_after_a_clear_are_reused() -> None:
    """The hot path's generation check follows clear(): a connection opened after it goes
    idle and is reused; one from before it is closed as stale on check-in."""
    book = make_book()
    before = open_connection(book)
    book.clear()
    book.mark_ready()
    after = open_connection(book)
    assert book.check_in(before, now=0.0) is ConnectionClosedReason.STALE
    assert book.check_in(after, now=0.0) is None
    assert book.take_idle(now=0.0) is after
    assert book.generation_of(after) == 1


def test_load_balanced_checkout_takes_fresh_and_skips_stale_connections() -> None:
    book = make_book(load_balanced=True)
    a, b = open_connection(book, "A"), open_connection(book, "B")
    book.check_in(a, now=0.0)
    book.check_in(b, now=0.0)
    assert book.take_idle(now=0.0) is b
    book.check_in(b, now=0.0)
    book.clear(service_id="B")
    assert book.closing == [(b, ConnectionClosedReason.STALE)]
    assert book.take_idle(now=0.0) is a
    assert book.check_in(a, now=0.0) is None


def test_a_refused_check_in_leaves_the_checked_out_connection_alone() -> None:
    book = make_book()
    conn = open_connection(book)
    with pytest.raises(InvalidOperation):
        book.check_in(FakeConnection(conn.id), now=0.0)
    assert book.generation_of(conn) == 0 and book.statistics().in_use == 1
    with pytest.raises(InvalidOperation):
        book.discard(FakeConnection(conn.id))
    book.discard(conn)
    assert book.statistics().in_use == 0
