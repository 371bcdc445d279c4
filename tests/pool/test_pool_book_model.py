"""A hypothesis state machine drives the pure PoolBook through random operation sequences.

After every step: each connection is in exactly one place (idle, in use, or handed to the
runtime to close), the counters add up, maxPoolSize and maxConnecting hold, and after
``assign`` no waiter is left behind while something could serve it (FIFO, no lost wakeups).
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from asyncmongo.core.cmap.book import PERMIT, PoolBook, PoolState
from asyncmongo.core.cmap.events import ConnectionClosedReason
from asyncmongo.core.cmap.options import PoolOptions
from tests.pool.fakes import ADDRESS, FakeConnection


def never(waiter: int) -> bool:
    return False


class PoolBookMachine(RuleBasedStateMachine):
    book: PoolBook[FakeConnection, int]

    @initialize(
        max_pool_size=st.sampled_from([0, 1, 2, 4]),
        max_connecting=st.integers(1, 3),
        max_idle_ms=st.sampled_from([0, 1000]),
        min_pool_size=st.integers(0, 2),
    )
    def setup(
        self, max_pool_size: int, max_connecting: int, max_idle_ms: int, min_pool_size: int
    ) -> None:
        if max_pool_size:
            min_pool_size = min(min_pool_size, max_pool_size)
        self.options = PoolOptions(
            max_pool_size=max_pool_size,
            max_connecting=max_connecting,
            max_idle_time_ms=max_idle_ms,
            min_pool_size=min_pool_size,
        )
        self.book = PoolBook(ADDRESS, self.options)
        self.now = 0.0
        self.held: list[FakeConnection] = []  # checked out by "callers"
        self.permits = 0  # maxConnecting slots held by "callers"
        self.closed: list[FakeConnection] = []
        self.next_waiter = 0

    def drain(self) -> None:
        for conn, reason in self.book.closing:
            assert isinstance(reason, ConnectionClosedReason)
            conn.close()
            self.closed.append(conn)
        self.book.closing.clear()

    @rule()
    def ready(self) -> None:
        self.book.mark_ready()

    @rule(interrupt=st.booleans())
    def clear(self, interrupt: bool) -> None:
        decision = self.book.clear(interrupt_in_use=interrupt)
        for conn in decision.interrupt:
            assert conn in self.held
            conn.close()
        self.drain()

    @rule()
    def close(self) -> None:
        self.book.close()
        self.drain()

    @rule(seconds=st.sampled_from([0.1, 0.6, 2.0]))
    def advance(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def check_out(self) -> None:
        conn = self.book.take_idle(self.now)
        self.drain()
        if conn is not None:
            self.held.append(conn)
        elif self.book.can_create():
            self.book.reserve()
            self.permits += 1

    @precondition(lambda self: self.permits > 0)
    @rule(succeed=st.booleans())
    def finish_connecting(self, succeed: bool) -> None:
        self.permits -= 1
        if not succeed:
            self.book.release()
            return
        conn_id, generation = self.book.next_connection_id()
        conn = FakeConnection(conn_id)
        self.book.connected(conn, generation)
        self.held.append(conn)

    @precondition(lambda self: bool(self.held))
    @rule(index=st.integers(0, 100), peer_closed=st.booleans())
    def check_in(self, index: int, peer_closed: bool) -> None:
        conn = self.held.pop(index % len(self.held))
        if peer_closed:
            conn.close()
        reason = self.book.check_in(conn, self.now)
        if reason is not None:
            conn.close()
            self.closed.append(conn)

    @precondition(lambda self: self.book.state is PoolState.READY)  # else checkout fails
    @rule(count=st.integers(1, 3))
    def enqueue_and_assign(self, count: int) -> None:
        for _ in range(count):
            self.book.waiters.append(self.next_waiter)
            self.next_waiter += 1
        order = list(self.book.waiters)
        grants = self.book.assign(self.now, never)
        self.drain()
        assert [w for w, _ in grants] == order[: len(grants)]  # FIFO
        for _, grant in grants:
            if grant is PERMIT:
                self.permits += 1
            else:
                assert isinstance(grant, FakeConnection)
                self.held.append(grant)
        if self.book.waiters and self.book.state is PoolState.READY:
            assert not self.book.idle and not self.book.can_create()

    @rule()
    def prune_and_fill(self) -> None:
        self.book.prune(self.now)
        self.drain()
        self.permits += self.book.reserve_for_min_size()

    @invariant()
    def books_balance(self) -> None:
        book = getattr(self, "book", None)
        if book is None:
            return
        idle_ids = [e.conn.id for e in book.idle]
        in_use_ids = list(book.in_use)
        held_ids = [c.id for c in self.held]
        assert sorted(in_use_ids) == sorted(held_ids)
        assert not set(idle_ids) & set(in_use_ids)
        assert len(set(idle_ids)) == len(idle_ids)
        assert book.pending == self.permits
        assert book.total == len(idle_ids) + len(in_use_ids) + self.permits
        if self.options.max_pool_size:
            assert book.total <= self.options.max_pool_size
        assert book.pending <= self.options.max_connecting
        assert all(not e.conn.closed for e in book.idle)
        assert not {c.id for c in self.closed} & (set(idle_ids) | set(in_use_ids))
        if book.state is PoolState.CLOSED:
            assert not book.idle and not book.waiters


TestPoolBookMachine = PoolBookMachine.TestCase
TestPoolBookMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
