"""The pool's bookkeeping and decisions, with no I/O (STYLE: decide synchronously, act later).

``PoolBook`` knows which connections are idle (a stack: most recently used on top), which are
in use, how many are being established, the FIFO of waiters and the generations. Its methods
are plain ``def``s that change the books and say what to do: which waiter gets which
connection or the right to open one, which connections to close and why. The runtime pool
carries that out (wakes futures, closes sockets, emits events). Connections and waiters are
opaque to it: a connection needs ``id``, ``is_closed``, ``service_id``; a waiter is whatever the
runtime queues (an asyncio future). Time comes in as ``now`` (seconds, monotonic).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.cmap.events import ConnectionClosedReason
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.errors import InvalidOperation

__all__ = [
    "PERMIT",
    "ClearDecision",
    "PoolBook",
    "PoolState",
    "PoolStatistics",
    "PooledConnection",
]


class PoolState(enum.Enum):
    """CMAP pool states: paused (initial, after clear), ready, closed (final)."""

    PAUSED = "paused"
    READY = "ready"
    CLOSED = "closed"


class PooledConnection(Protocol):
    """What the pool needs from a connection (see docs: conn_contract)."""

    @property
    def id(self) -> int: ...

    @property
    def is_closed(self) -> bool: ...

    @property
    def service_id(self) -> Hashable | None: ...


C = TypeVar("C", bound=PooledConnection)
W = TypeVar("W")


class _Permit(enum.Enum):
    PERMIT = "permit"


#: A grant that is not a connection: the waiter may open one (a maxConnecting slot is held).
PERMIT = _Permit.PERMIT


class _Entry(Generic[C]):
    """The pool's record of one established connection."""

    __slots__ = ("conn", "generation", "idle_since", "service_id")

    def __init__(self, conn: C, generation: int, service_id: Hashable | None) -> None:
        self.conn = conn
        self.generation = generation
        self.service_id = service_id
        #: When it last went idle; kept up to date (and read) only with maxIdleTimeMS.
        self.idle_since = 0.0


@dataclass(frozen=True, slots=True)
class PoolStatistics:
    """A snapshot of the pool's counters (total = in_use + idle + connecting)."""

    address: Address
    state: PoolState
    generation: int
    total: int
    in_use: int
    idle: int
    connecting: int
    waiting: int
    max_pool_size: int
    max_connecting: int

    def summary(self) -> str:
        """The one-line summary repr(pool) shows."""
        return (
            f"{format_address(self.address)} {self.state.value}: {self.in_use} in use, "
            f"{self.idle} idle, {self.connecting} connecting, {self.waiting} waiting, "
            f"gen {self.generation}"
        )


@dataclass(frozen=True, slots=True)
class ClearDecision(Generic[C, W]):
    """What ``clear`` asks the runtime to do (the stale idle ones are in ``closing``)."""

    emit_event: bool
    old_generation: int
    failed_waiters: tuple[W, ...]
    interrupt: tuple[C, ...]


class PoolBook(Generic[C, W]):
    """Counters, idle stack, in-use map, wait queue and generations of one pool."""

    __slots__ = (
        "_last_id",
        "_lb",
        "_max_size",
        "address",
        "checkout_generation",
        "closing",
        "generation",
        "idle",
        "in_use",
        "max_idle",
        "options",
        "pending",
        "reusable_generation",
        "service_generations",
        "state",
        "waiters",
    )

    def __init__(self, address: Address, options: PoolOptions) -> None:
        self.address = address
        self.options = options
        self.state = PoolState.PAUSED
        self.generation = 0
        #: Load-balanced mode: service id -> [generation, connection count].
        self.service_generations: dict[Hashable | None, list[int]] = {}
        self.idle: deque[_Entry[C]] = deque()
        self.in_use: dict[int, _Entry[C]] = {}
        #: maxConnecting slots held: connections being established plus granted permits.
        self.pending = 0
        self.waiters: deque[W] = deque()
        #: Outbox: connections the books dropped; the runtime closes them and emits events.
        self.closing: list[tuple[C, ConnectionClosedReason]] = []
        self._last_id = 0
        self._lb = options.load_balanced
        self._max_size = options.max_pool_size or (1 << 62)
        #: maxIdleTimeMS in seconds (None: no limit).
        self.max_idle = options.max_idle_time_ms / 1000 if options.max_idle_time_ms else None
        #: The generation of a connection that checkout and check-in may reuse without the
        #: slower checks: the pool's; -1 (no connection's) when load-balanced (each service
        #: has its own) or closed. One comparison on the hot path instead of three. The
        #: runtime pool's fast paths read it (with ``idle``, ``in_use`` and ``max_idle``) to
        #: take and return the usual connection without a call into the book.
        self.reusable_generation = -1 if self._lb else 0
        #: ``reusable_generation`` while the pool is ready, else -1: the one comparison the
        #: runtime pool's checkout fast path makes for the state and the generation.
        self.checkout_generation = -1

    # -- counters -------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """CMAP totalConnectionCount (pending + available + in use)."""
        return len(self.idle) + len(self.in_use) + self.pending

    def statistics(self) -> PoolStatistics:
        return PoolStatistics(
            address=self.address,
            state=self.state,
            generation=self.generation,
            total=self.total,
            in_use=len(self.in_use),
            idle=len(self.idle),
            connecting=self.pending,
            waiting=len(self.waiters),
            max_pool_size=self.options.max_pool_size,
            max_connecting=self.options.max_connecting,
        )

    # -- states ---------------------------------------------------------------------------

    def mark_ready(self) -> bool:
        """paused -> ready; True when the state changed (emit PoolReady then)."""
        if self.state is not PoolState.PAUSED:
            return False
        self.state = PoolState.READY
        self.checkout_generation = self.reusable_generation
        return True

    def clear(
        self, *, service_id: Hashable | None = None, interrupt_in_use: bool = False
    ) -> ClearDecision[C, W]:
        """CMAP: Clearing a Connection Pool (load-balanced or not).

        Bumps the generation, closes the idle connections it made stale at once (into
        ``closing``), and says which waiters to fail and which in-use connections to interrupt.
        """
        old = self.generation
        if self.state is PoolState.CLOSED:
            return ClearDecision(False, old, (), ())
        if self.options.load_balanced:
            return self._clear_service(service_id, interrupt_in_use)
        was_ready = self.state is PoolState.READY
        self.generation += 1
        self.reusable_generation = self.generation
        self.state = PoolState.PAUSED
        self.checkout_generation = -1
        failed = tuple(self.waiters)
        self.waiters.clear()
        self._close_idle(ConnectionClosedReason.STALE, lambda entry: True)
        interrupt: tuple[C, ...] = ()
        if interrupt_in_use:
            interrupt = tuple(e.conn for e in self.in_use.values() if e.generation <= old)
        return ClearDecision(was_ready, old, failed, interrupt)

    def _clear_service(
        self, service_id: Hashable | None, interrupt_in_use: bool
    ) -> ClearDecision[C, W]:
        # CMAP: Clearing a load balanced pool -- no pause, the WaitQueue is kept.
        old = self.generation
        self.generation += 1
        services = list(self.service_generations) if service_id is None else [service_id]
        for sid in services:
            if sid in self.service_generations:
                self.service_generations[sid][0] += 1
        self._close_idle(ConnectionClosedReason.STALE, self._is_stale)
        interrupt: tuple[C, ...] = ()
        if interrupt_in_use:
            interrupt = tuple(e.conn for e in self.in_use.values() if self._is_stale(e))
        return ClearDecision(True, old, (), interrupt)

    def close(self) -> tuple[W, ...] | None:
        """Mark the pool closed; idle connections go to ``closing``; returns waiters to fail.

        None when it was already closed.
        """
        if self.state is PoolState.CLOSED:
            return None
        self.state = PoolState.CLOSED
        self.reusable_generation = self.checkout_generation = -1
        failed = tuple(self.waiters)
        self.waiters.clear()
        self._close_idle(ConnectionClosedReason.POOL_CLOSED, lambda entry: True)
        return failed

    # -- checkout -------------------------------------------------------------------------

    def take_idle(self, now: float) -> C | None:
        """Pop the most recently used non-perished idle connection and mark it in use.

        Perished ones met on the way go to ``closing`` (CMAP: Checking Out a Connection).
        """
        idle = self.idle
        while idle:
            entry = idle.pop()
            conn = entry.conn
            # hot path: a connection of the current generation (not load-balanced), not
            # idle too long, still open; anything else is decided by _idle_perished
            if (
                entry.generation != self.reusable_generation
                or (self.max_idle is not None and now - entry.idle_since > self.max_idle)
                or conn.is_closed
            ):
                reason = self._idle_perished(entry, now)
                if reason is not None:
                    self._forget(entry)
                    self.closing.append((conn, reason))
                    continue
            self.in_use[conn.id] = entry
            return conn
        return None

    def can_create(self) -> bool:
        """Below maxPoolSize and maxConnecting, and ready."""
        return (
            self.pending < self.options.max_connecting
            and len(self.idle) + len(self.in_use) + self.pending < self._max_size
            and self.state is PoolState.READY
        )

    def reserve(self) -> None:
        """Take a maxConnecting slot (after ``can_create`` said yes)."""
        self.pending += 1

    def release(self) -> None:
        """Give back a maxConnecting slot that was not (or no longer) used."""
        self.pending -= 1

    def next_connection_id(self) -> tuple[int, int]:
        """The next connection id (1, 2, ... in creation order) and its generation."""
        self._last_id += 1
        return self._last_id, self.generation

    def connected(self, conn: C, generation: int) -> None:
        """An establishment succeeded: release its slot, record the connection as in use.

        Load-balanced: it takes its service's current generation (CMAP: Load Balancer Mode).
        """
        self.pending -= 1
        service_id = conn.service_id if self.options.load_balanced else None
        if self.options.load_balanced:
            record = self.service_generations.setdefault(service_id, [0, 0])
            record[1] += 1
            generation = record[0]
        self.in_use[conn.id] = _Entry(conn, generation, service_id)

    def assign(self, now: float, abandoned: Callable[[W], bool]) -> list[tuple[W, C | _Permit]]:
        """Serve the wait queue in FIFO order: an idle connection, else a permit to open one.

        Stops at the first waiter that cannot be served, so no newer request overtakes it.
        Waiters for which ``abandoned`` says True (cancelled, not yet dequeued) are dropped.
        """
        grants: list[tuple[W, C | _Permit]] = []
        waiters = self.waiters
        while waiters and self.state is PoolState.READY:
            if abandoned(waiters[0]):
                waiters.popleft()
                continue
            conn = self.take_idle(now)
            if conn is not None:
                grants.append((waiters.popleft(), conn))
            elif self.can_create():
                self.pending += 1
                grants.append((waiters.popleft(), PERMIT))
            else:
                break
        return grants

    # -- checkin --------------------------------------------------------------------------

    def check_in(self, conn: C, now: float) -> ConnectionClosedReason | None:
        """Take a connection back: the reason to close it, or None when it went idle."""
        return self.check_in_entry(conn, self.in_use.pop(conn.id, None), now)

    def check_in_entry(
        self, conn: C, entry: _Entry[C] | None, now: float
    ) -> ConnectionClosedReason | None:
        """``check_in`` for a caller that already popped ``in_use[conn.id]`` (``entry``, None
        if absent): the runtime pool's fast path pops it, keeps the usual connection (current
        generation, open) itself and hands anything else here."""
        if entry is None or entry.conn is not conn:
            raise self._not_checked_out(conn, entry)
        # hot path: current generation, not load-balanced, pool not closed, still open
        if entry.generation != self.reusable_generation or conn.is_closed:
            reason = self._checkin_perished(entry)
            if reason is not None:
                self._forget(entry)
                return reason
        entry.idle_since = now
        self.idle.append(entry)
        return None

    def discard(self, conn: C) -> None:
        """Forget an in-use connection the caller found broken (it will be closed)."""
        self._forget(self._take_in_use(conn))

    def _take_in_use(self, conn: C) -> _Entry[C]:
        """Remove ``conn`` from the checked-out set; InvalidOperation (and nothing changed) when
        it is not checked out of this pool, e.g. checked in twice."""
        entry = self.in_use.pop(conn.id, None)
        if entry is None or entry.conn is not conn:
            raise self._not_checked_out(conn, entry)
        return entry

    def _not_checked_out(self, conn: C, popped: _Entry[C] | None = None) -> InvalidOperation:
        """The error for a connection not checked out of this pool; ``popped``: the entry
        taken out under its id, another connection's, which stays checked out."""
        if popped is not None:
            self.in_use[conn.id] = popped
        return InvalidOperation(
            f"connection {conn.id} is not checked out of the pool for "
            f"{format_address(self.address)}"
        )

    # -- generations (SDAM: stale application errors) ---------------------------------------

    def generation_of(self, conn: C) -> int:
        """The generation a checked-out connection was created in (its service's, if LB)."""
        entry = self.in_use.get(conn.id)
        if entry is None or entry.conn is not conn:
            raise self._not_checked_out(conn)
        return entry.generation

    def is_stale_generation(self, generation: int, service_id: Hashable | None = None) -> bool:
        """True when an error seen at ``generation`` predates the last clear (SDAM ignores it)."""
        if self._lb:
            record = self.service_generations.get(service_id)
            return record is not None and generation < record[0]
        return generation < self.generation

    # -- background -----------------------------------------------------------------------

    def prune(self, now: float) -> None:
        """Move every perished idle connection to ``closing`` (a Background Thread Run)."""
        self._close_idle_where(now)

    def reserve_for_min_size(self) -> int:
        """Slots to take now to populate toward minPoolSize without waiting (0 if none)."""
        count = 0
        while (
            self.state is PoolState.READY
            and self.total < self.options.min_pool_size
            and self.pending < self.options.max_connecting
        ):
            self.pending += 1
            count += 1
        return count

    # -- internals ------------------------------------------------------------------------

    def _is_stale(self, entry: _Entry[C]) -> bool:
        if self.options.load_balanced:
            record = self.service_generations.get(entry.service_id)
            return record is None or record[0] != entry.generation
        return entry.generation != self.generation

    def _idle_perished(self, entry: _Entry[C], now: float) -> ConnectionClosedReason | None:
        if self._is_stale(entry):
            return ConnectionClosedReason.STALE
        if self.max_idle is not None and now - entry.idle_since > self.max_idle:
            return ConnectionClosedReason.IDLE
        if entry.conn.is_closed:
            return ConnectionClosedReason.ERROR
        return None

    def _checkin_perished(self, entry: _Entry[C]) -> ConnectionClosedReason | None:
        if self.state is PoolState.CLOSED:
            return ConnectionClosedReason.POOL_CLOSED
        if self._is_stale(entry):
            return ConnectionClosedReason.STALE
        if entry.conn.is_closed:
            return ConnectionClosedReason.ERROR
        return None

    def _forget(self, entry: _Entry[C]) -> None:
        if not self.options.load_balanced:
            return
        record = self.service_generations.get(entry.service_id)
        if record is not None:
            record[1] -= 1
            if record[1] == 0:
                del self.service_generations[entry.service_id]

    def _close_idle(
        self, reason: ConnectionClosedReason, which: Callable[[_Entry[C]], bool]
    ) -> None:
        keep: deque[_Entry[C]] = deque()
        for entry in self.idle:
            if which(entry):
                self._forget(entry)
                self.closing.append((entry.conn, reason))
            else:
                keep.append(entry)
        self.idle = keep

    def _close_idle_where(self, now: float) -> None:
        keep: deque[_Entry[C]] = deque()
        for entry in self.idle:
            reason = self._idle_perished(entry, now)
            if reason is None:
                keep.append(entry)
            else:
                self._forget(entry)
                self.closing.append((entry.conn, reason))
        self.idle = keep
