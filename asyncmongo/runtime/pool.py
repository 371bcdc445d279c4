"""The CMAP connection pool of one server, on asyncio.

``PoolBook`` (pure) decides who gets which connection and what to close; this module does the
awaiting: waiter futures, connection establishment, the minPoolSize filler, events and log
messages. The pool never imports the connection module: it is given an async
``establish(connection_id) -> connection`` factory (tests use fakes).

Cancellation: every await hands back what it held. A checkout cancelled while queued leaves the
queue (or returns the connection / maxConnecting slot it was granted in the meantime); one
cancelled while establishing releases the slot and closes the half-made connection; an
operation cancelled while holding a connection discards it (``checkout()`` context). Check-in
is synchronous, so it cannot be interrupted.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Coroutine, Hashable
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.cmap.book import PERMIT, PoolBook, PooledConnection, PoolState, PoolStatistics
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
from asyncmongo.core.cmap.log_messages import log_message
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.errors import (
    NetworkTimeout,
    PoolClearedError,
    PoolClosedError,
    WaitQueueTimeoutError,
)
from asyncmongo.monitoring.debug_check import debug_maybe

__all__ = ["Pinned", "Pool", "PoolConnection"]

LOGGER = logging.getLogger("asyncmongo.connection")

_monotonic = time.monotonic
_READY = PoolState.READY
_DEBUG = logging.DEBUG
_log_enabled = LOGGER.isEnabledFor
#: False when the logger certainly does not log DEBUG (monitoring/debug_check.py): then
#: ``_log_enabled(_DEBUG)`` need not be asked.
_debug_maybe = debug_maybe(LOGGER)


class Pinned(enum.Enum):
    """What a checked-out connection is pinned to in load-balanced mode (load balancers spec:
    a cursor or a transaction keeps its connection until it ends)."""

    CURSOR = "cursors"
    TRANSACTION = "transactions"


class PoolConnection(PooledConnection, Protocol):
    """A pooled connection: the book's needs plus a non-blocking and a graceful close."""

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


C = TypeVar("C", bound=PoolConnection)
Establish = Callable[[int], Coroutine[Any, Any, C]]
Spawn = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]
Listener = Callable[[PoolEvent], None]


class Pool(Generic[C]):
    """One server's pool: ``check_out``/``check_in`` (or ``async with pool.checkout()``).

    ``establish_background`` opens the minPoolSize filler's connections (default:
    ``establish``; the client's applies timeoutMS to their handshakes). ``listener`` receives
    every CMAP event; log messages go to the "asyncmongo.connection"
    logger at DEBUG. ``spawn`` starts the background task (minPoolSize filler, idle pruning)
    in the client's task group; without it the pool creates the task itself. Either way
    ``close()`` ends and awaits it. ``on_background_error`` receives establishment errors of
    the filler, for SDAM ("handle_pre_handshake_error"); checkout errors are re-raised to the
    caller instead. ``maintenance_interval`` (seconds) spaces the background runs; None
    disables them (tests).
    """

    __slots__ = (
        "_book",
        "_cleared_message",
        "_establish",
        "_establish_background",
        "_establishing",
        "_listener",
        "_maintainer",
        "_maintenance_interval",
        "_on_background_error",
        "_pinned",
        "_spawn",
        "_wake",
        "address",
        "options",
    )

    def __init__(
        self,
        address: Address,
        options: PoolOptions,
        establish: Establish[C],
        *,
        listener: Listener | None = None,
        spawn: Spawn | None = None,
        on_background_error: Callable[[BaseException], None] | None = None,
        maintenance_interval: float | None = 10.0,
        establish_background: Establish[C] | None = None,
    ) -> None:
        self.address = address
        self.options = options
        self._book: PoolBook[C, asyncio.Future[Any]] = PoolBook(address, options)
        self._establish = establish
        self._establish_background = establish_background or establish
        self._listener = listener
        self._spawn = spawn
        self._on_background_error = on_background_error
        self._maintenance_interval = maintenance_interval
        self._maintainer: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        #: connection id -> (establishing task, generation), for interruptInUseConnections.
        self._establishing: dict[int, tuple[asyncio.Task[C], int]] = {}
        #: Load-balanced mode: checked-out connection id -> what it is pinned to.
        self._pinned: dict[int, Pinned] = {}
        self._cleared_message = (
            f"Connection pool for {format_address(address)} is paused (not ready yet)"
        )
        if self._observed():
            self._emit(PoolCreatedEvent(address, options.non_default()))

    # -- introspection ----------------------------------------------------------------------

    @property
    def state(self) -> PoolState:
        return self._book.state

    @property
    def generation(self) -> int:
        return self._book.generation

    def generation_of(self, conn: C) -> int:
        """The generation of a checked-out connection, to tag its errors for SDAM.

        The executor asks on every attempt: the book's lookup is inlined, and the book
        raises the error for a connection that is not checked out of this pool."""
        entry = self._book.in_use.get(conn.id)
        if entry is not None and entry.conn is conn:
            return entry.generation
        return self._book.generation_of(conn)

    def pin(self, conn: C, to: Pinned) -> None:
        """Note that a checked-out connection is pinned to a cursor or a transaction (it stays
        checked out until released by ``check_in``/``discard``); a WaitQueueTimeoutError in
        load-balanced mode counts them (load balancers spec)."""
        self._pinned[conn.id] = to

    def pinned_counts(self) -> dict[Pinned, int]:
        """How many checked-out connections each kind of pin holds."""
        counts = dict.fromkeys(Pinned, 0)
        for kind in self._pinned.values():
            counts[kind] += 1
        return counts

    def generation_for(self, service_id: Hashable | None = None) -> int:
        """The current generation SDAM compares an error's connection generation with: in
        load-balanced mode that of the connection's service (CMAP: Load Balancer Mode keeps
        one generation per serviceId), else the pool's."""
        book = self._book
        if book.options.load_balanced:
            record = book.service_generations.get(service_id)
            return record[0] if record is not None else 0
        return book.generation

    def is_stale_generation(self, generation: int, service_id: Hashable | None = None) -> bool:
        """SDAM: an error from a connection of an older generation must not clear again."""
        return self._book.is_stale_generation(generation, service_id)

    def statistics(self) -> PoolStatistics:
        """A frozen snapshot of the counters."""
        return self._book.statistics()

    def observe(self, listener: Listener | None) -> None:
        """Publish CMAP events to ``listener`` from now on (None: build none)."""
        self._listener = listener

    def __repr__(self) -> str:
        return f"Pool({self._book.statistics().summary()})"

    # -- checkout ---------------------------------------------------------------------------

    def checkout(self, deadline: float | None = None) -> _Checkout[C]:
        """``async with pool.checkout() as conn``: checks in on exit; discards on cancellation.

        A connection left by a cancellation or a BaseException may be mid-message, so it is
        closed rather than reused.
        """
        return _Checkout(self, deadline)

    def try_check_out(self) -> C | None:
        """``check_out()`` without a coroutine, when it would neither wait nor publish: an
        idle connection of a ready pool nobody queues for, while nobody observes the pool
        (no CMAP listener, the logger not at DEBUG). None otherwise: await ``check_out()``,
        which then emits the events and log messages as usual.

        For the executor's hot path (``pool.try_check_out() or await pool.check_out(...)``):
        awaiting ``check_out`` costs a coroutine per operation even when it never suspends.
        Perished idle connections met on the way are closed, as ``check_out`` does.

        ``PoolBook.take_idle``'s usual case is inline (once per operation): the top of the
        idle stack, of the reusable generation, open and (with maxIdleTimeMS) not idle too
        long, moves to ``in_use`` here; the clock is read only when maxIdleTimeMS is set.
        Anything else is the book's to decide.
        """
        if self._listener is not None or (_debug_maybe() and _log_enabled(_DEBUG)):
            return None
        book = self._book
        idle = book.idle
        if not idle or book.waiters:
            return None
        entry = idle[-1]
        conn = entry.conn
        if (
            entry.generation == book.checkout_generation  # -1 unless ready
            and not conn.is_closed
            and (book.max_idle is None or _monotonic() - entry.idle_since <= book.max_idle)
        ):
            idle.pop()
            book.in_use[conn.id] = entry
            return conn
        if book.state is not _READY:
            return None
        taken = book.take_idle(_monotonic())
        if book.closing:
            self._close_discarded()
        return taken

    async def check_out(self, deadline: float | None = None) -> C:
        """A ready connection (CMAP: Checking Out a Connection).

        ``deadline`` is an absolute ``loop.time()`` (the operation's timeoutMS), combined with
        waitQueueTimeoutMS. Raises WaitQueueTimeoutError, PoolClearedError (paused or cleared
        while waiting), PoolClosedError, or the establishment error (report it to SDAM).
        """
        start = _monotonic()
        # _observed() inlined (here and in check_in): once per operation each
        observed = self._listener is not None or _log_enabled(_DEBUG)
        if observed:
            self._emit(ConnectionCheckOutStartedEvent(self.address))
        book = self._book
        if book.state is _READY and not book.waiters:
            conn = book.take_idle(start)
            if book.closing:
                self._close_discarded()
            if conn is not None:
                if observed:
                    self._emit_checked_out(conn, start)
                return conn
            if book.can_create():
                book.reserve()
                return await self._establish_for_checkout(start, deadline)
        return await self._wait_for_connection(start, deadline)

    async def _wait_for_connection(self, start: float, deadline: float | None) -> C:
        """The slow path: queue FIFO for a connection or a connecting slot."""
        if self._book.state is not _READY:
            raise self._not_ready(start)
        grant = await self._wait_for_grant(start, deadline)
        if self.state is not _READY:  # cleared or closed between the grant and now
            self._give_back(grant)
            raise self._not_ready(start)
        if grant is PERMIT:
            # Re-enter the checkout loop first: a connection the filler (or a checkin) made
            # available since the grant beats opening one more (CMAP: Populating the Pool).
            book = self._book
            conn = book.take_idle(_monotonic())
            if book.closing:
                self._close_discarded()
            if conn is None:
                return await self._establish_for_checkout(start, deadline)
            book.release()
            self._after_capacity_change()
            grant = conn
        if self._observed():
            self._emit_checked_out(grant, start)
        result: C = grant
        return result

    async def _wait_for_grant(self, start: float, deadline: float | None) -> Any:
        """Wait in the queue (bounded by waitQueueTimeoutMS and ``deadline``) for a grant."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        # CSOT: the operation's timeoutMS left for the wait, when it (not waitQueueTimeoutMS,
        # which timeoutMS overrides) ends it: the error says so
        budget_ms = None if deadline is None else (deadline - now) * 1000
        if self.options.wait_queue_timeout_ms:
            limit = now + self.options.wait_queue_timeout_ms / 1000
            if deadline is None or limit < deadline:
                budget_ms = None
            deadline = limit if deadline is None else min(deadline, limit)
        waiter: asyncio.Future[Any] = loop.create_future()
        self._book.waiters.append(waiter)
        try:
            if deadline is None:
                return await waiter
            async with asyncio.timeout_at(deadline):
                return await waiter
        except TimeoutError:
            if _granted(waiter):
                return waiter.result()  # granted as the deadline passed: take it
            self._abandon(waiter)
            timeout = ConnectionCheckOutFailedReason.TIMEOUT
            raise self._checkout_failed(start, timeout, None, budget_ms) from None
        except (PoolClearedError, PoolClosedError) as exc:
            closed = isinstance(exc, PoolClosedError)
            self._emit_checkout_failed(start, _failed_reason(closed), exc)
            raise
        except BaseException as exc:
            self._abandon(waiter)
            self._emit_checkout_failed(start, ConnectionCheckOutFailedReason.CONNECTION_ERROR, exc)
            raise

    def _not_ready(self, start: float) -> BaseException:
        """PoolClosedError or PoolClearedError (paused), after ConnectionCheckOutFailed."""
        closed = self._book.state is PoolState.CLOSED
        return self._checkout_failed(start, _failed_reason(closed), None)

    def _abandon(self, waiter: asyncio.Future[Any]) -> None:
        """A waiter gave up: leave the queue, or hand back what it was granted meanwhile."""
        if not waiter.done() or waiter.cancelled():
            waiter.cancel()
            try:
                self._book.waiters.remove(waiter)
            except ValueError:
                pass  # already dropped by assign()
            return
        if waiter.exception() is None:
            self._give_back(waiter.result())

    def _give_back(self, grant: Any) -> None:
        """Return an unused grant: the maxConnecting slot, or the connection (no events)."""
        if grant is PERMIT:
            self._book.release()
        else:
            reason = self._book.check_in(grant, _monotonic())
            if reason is not None:
                self._close_connection(grant, reason, None)
        self._after_capacity_change()

    async def _establish_for_checkout(self, start: float, deadline: float | None) -> C:
        """Open a connection with the maxConnecting slot this checkout holds, within the
        operation's ``deadline`` (CSOT: the remaining timeoutMS bounds connection
        establishment, handshake and authentication included, below connectTimeoutMS)."""
        book = self._book
        conn_id, generation = book.next_connection_id()
        created = _monotonic()
        if self._observed():
            self._emit(ConnectionCreatedEvent(self.address, conn_id))
        task = asyncio.get_running_loop().create_task(self._establish(conn_id))
        self._establishing[conn_id] = (task, generation)
        try:
            if deadline is None:
                conn = await task
            else:
                budget_ms = (deadline - asyncio.get_running_loop().time()) * 1000
                try:
                    async with asyncio.timeout_at(deadline):
                        conn = await task
                except TimeoutError:
                    where = format_address(self.address)
                    raise NetworkTimeout(
                        f"connecting to {where} did not finish within the operation's "
                        f"timeoutMS (phase: connect, {max(budget_ms, 0):.0f} ms left for it)"
                    ) from None
        except BaseException as exc:
            del self._establishing[conn_id]
            error = self._establishment_failed(task, exc, conn_id, generation, created)
            self._emit_checkout_failed(
                start, ConnectionCheckOutFailedReason.CONNECTION_ERROR, error
            )
            if error is not exc:
                raise error from exc
            raise
        del self._establishing[conn_id]
        book.connected(conn, generation)
        observed = self._observed()
        if observed:
            self._emit(ConnectionReadyEvent(self.address, conn_id, _ms_since(created)))
        self._after_capacity_change()
        if book.state is PoolState.CLOSED:
            book.discard(conn)
            self._close_connection(conn, ConnectionClosedReason.POOL_CLOSED, None)
            raise self._checkout_failed(start, ConnectionCheckOutFailedReason.POOL_CLOSED, None)
        if observed:
            self._emit_checked_out(conn, start)
        return conn

    def _establishment_failed(
        self,
        task: asyncio.Task[C],
        exc: BaseException,
        conn_id: int,
        generation: int,
        created: float,
    ) -> BaseException:
        """Settle the books after a checkout's establishment ended in ``exc``; the error to raise.

        The slot is released and ConnectionClosed emitted, except when the connection came up
        just as the checkout was cancelled: then it is kept, idle, for someone else. A
        cancellation that came from ``clear(interrupt_in_use_connections=True)`` (not from our
        caller) becomes a retryable PoolClearedError.
        """
        if task.done() and not task.cancelled() and task.exception() is None:
            self._make_available(task.result(), generation, created)
            return exc
        self._book.release()
        error = exc
        if isinstance(exc, asyncio.CancelledError) and not _current_task_cancelling():
            where = format_address(self.address)
            error = PoolClearedError(
                f"Connection to {where} interrupted due to server monitor timeout"
            )
        self._emit_closed(conn_id, ConnectionClosedReason.ERROR, error)
        self._after_capacity_change()
        return error

    def _make_available(self, conn: C, generation: int, created: float) -> None:
        """A freshly established connection nobody waits for: ready, then idle (or closed)."""
        book = self._book
        book.connected(conn, generation)
        if self._observed():
            self._emit(ConnectionReadyEvent(self.address, conn.id, _ms_since(created)))
        reason = book.check_in(conn, _monotonic())
        if reason is not None:
            self._close_connection(conn, reason, None)
        self._after_capacity_change()

    # -- checkin ----------------------------------------------------------------------------

    def check_in(self, conn: C) -> None:
        """Give a connection back (CMAP: Checking In a Connection); never blocks.

        A perished connection (stale, closed by the peer) or any connection of a closed pool
        is closed; otherwise it becomes idle, or goes straight to the first waiter.

        ``PoolBook.check_in``'s usual case is inline (once per operation): a connection of
        the reusable generation, still open, goes on the idle stack here (the clock is read
        only when maxIdleTimeMS is set, the one reader of ``idle_since``); anything else (not
        checked out, stale, closed, pool closed) is the book's ``check_in_entry``.
        """
        book = self._book
        if self._pinned:  # load-balanced mode only
            self._pinned.pop(conn.id, None)
        entry = book.in_use.pop(conn.id, None)
        if (
            entry is not None
            and entry.conn is conn
            and entry.generation == book.reusable_generation
            and not conn.is_closed
        ):
            if book.max_idle is not None:  # idle_since is read only for maxIdleTimeMS
                entry.idle_since = _monotonic()
            book.idle.append(entry)
            if self._listener is not None or (_debug_maybe() and _log_enabled(_DEBUG)):
                self._emit(ConnectionCheckedInEvent(self.address, conn.id))
            if book.waiters:
                self._assign(_monotonic())
            return
        now = _monotonic()
        reason = book.check_in_entry(conn, entry, now)
        if self._listener is not None or (_debug_maybe() and _log_enabled(_DEBUG)):
            self._emit(ConnectionCheckedInEvent(self.address, conn.id))
        if reason is not None:
            self._close_connection(conn, reason, None)
            self._after_capacity_change()
        elif book.waiters:
            self._assign(now)

    def discard(self, conn: C, error: BaseException | None = None) -> None:
        """Check in a connection that must not be reused (it failed or was interrupted)."""
        self._pinned.pop(conn.id, None)
        self._book.discard(conn)
        if self._observed():
            self._emit(ConnectionCheckedInEvent(self.address, conn.id))
        self._close_connection(conn, ConnectionClosedReason.ERROR, error)
        self._after_capacity_change()

    # -- states -----------------------------------------------------------------------------

    def ready(self) -> None:
        """Paused -> ready (SDAM saw the server); starts the background task on first use."""
        if not self._book.mark_ready():
            return
        if self._observed():
            self._emit(PoolReadyEvent(self.address))
        self._start_maintainer()
        self._poke()

    def clear(
        self,
        interrupt_in_use_connections: bool = False,
        service_id: Hashable | None = None,
        cause: BaseException | None = None,
    ) -> None:
        """CMAP: Clearing a Connection Pool. Non-blocking.

        Bumps the generation, pauses the pool and fails every queued checkout with
        PoolClearedError (not in load-balanced mode, where only ``service_id``'s generation
        moves). Idle connections of the old generation are closed at once; in-use ones are
        closed now only with ``interrupt_in_use_connections`` (else on check-in), which also
        interrupts connections still being established.
        """
        book = self._book
        decision = book.clear(service_id=service_id, interrupt_in_use=interrupt_in_use_connections)
        if book.state is PoolState.PAUSED:
            message = f"Connection pool for {format_address(self.address)} was cleared"
            if cause is not None:
                message += f" because another operation failed with: {cause}"
            self._cleared_message = message
        if decision.emit_event and self._observed():
            self._emit(PoolClearedEvent(self.address, service_id, interrupt_in_use_connections))
        self._close_discarded()
        if decision.failed_waiters:
            message = self._cleared_message
            for waiter in decision.failed_waiters:
                if not waiter.done():
                    waiter.set_exception(PoolClearedError(message))
        for conn in decision.interrupt:
            _abort(conn)
        if interrupt_in_use_connections:
            for task, generation in list(self._establishing.values()):
                if generation <= decision.old_generation:
                    task.cancel()
        self._poke()

    async def close(self) -> None:
        """CMAP: Closing a Connection Pool; ends the background task and awaits its cleanup.

        Idle connections are closed gracefully; in-use ones are closed when checked in.
        The cleanup is shielded: cancelling ``close()`` does not leave it half done.
        """
        book = self._book
        failed = book.close()
        if failed is None:
            await self._stop_maintainer()
            return
        where = format_address(self.address)
        message = f"Attempted to check out a connection from closed connection pool {where}"
        for waiter in failed:
            if not waiter.done():
                waiter.set_exception(PoolClosedError(message))
        closing = self._drain_closing()
        for conn, reason in closing:
            self._emit_closed(conn.id, reason, None)
        if self._observed():
            self._emit(PoolClosedEvent(self.address))
        await asyncio.shield(self._finish_close([conn for conn, _ in closing]))

    async def _finish_close(self, conns: list[C]) -> None:
        results = await asyncio.gather(*(c.aclose() for c in conns), return_exceptions=True)
        for conn, result in zip(conns, results, strict=True):
            if isinstance(result, BaseException):
                _abort(conn)
        await self._stop_maintainer()

    # -- background -------------------------------------------------------------------------

    def _start_maintainer(self) -> None:
        if self._maintainer is not None or self._maintenance_interval is None:
            return
        if not (self.options.min_pool_size or self.options.max_idle_time_ms):
            return
        self._wake = asyncio.Event()
        coro = self._maintain(self._maintenance_interval)
        if self._spawn is not None:
            self._maintainer = self._spawn(coro)
        else:
            self._maintainer = asyncio.get_running_loop().create_task(coro)

    async def _stop_maintainer(self) -> None:
        task = self._maintainer
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            if _current_task_cancelling():
                raise

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _maintain(self, interval: float) -> None:
        """Background Thread Runs: prune perished idle connections, populate to minPoolSize."""
        book = self._book
        wake = self._wake
        assert wake is not None
        while book.state is not PoolState.CLOSED:
            book.prune(_monotonic())
            self._close_discarded()
            count = book.reserve_for_min_size()
            if count:
                results = await asyncio.gather(*(self._populate() for _ in range(count)))
                if all(results):
                    continue
            # Synchronous from here to the wait, so no poke is lost; a failed run backs off.
            wake.clear()
            try:
                async with asyncio.timeout(interval):
                    await wake.wait()
            except TimeoutError:
                pass

    async def _populate(self) -> bool:
        """Open one connection for minPoolSize with a slot already reserved; True if it worked."""
        book = self._book
        conn_id, generation = book.next_connection_id()
        created = _monotonic()
        if self._observed():
            self._emit(ConnectionCreatedEvent(self.address, conn_id))
        try:
            conn = await self._establish_background(conn_id)
        except asyncio.CancelledError:
            book.release()
            self._emit_closed(conn_id, ConnectionClosedReason.ERROR, None)
            self._after_capacity_change()
            raise
        except Exception as exc:
            book.release()
            # SDAM first (it clears the pool), then the close, as the spec tests order them.
            if self._on_background_error is not None:
                try:
                    self._on_background_error(exc)
                except Exception:
                    LOGGER.exception("the pool's background error handler failed")
            self._emit_closed(conn_id, ConnectionClosedReason.ERROR, exc)
            self._after_capacity_change()
            return False
        self._make_available(conn, generation, created)
        return True

    # -- plumbing ---------------------------------------------------------------------------

    def _assign(self, now: float) -> None:
        grants = self._book.assign(now, _is_done)
        if self._book.closing:
            self._close_discarded()
        for waiter, grant in grants:
            waiter.set_result(grant)

    def _after_capacity_change(self) -> None:
        """A connection or slot was freed: serve the queue and let the filler top up."""
        if self._book.waiters:
            self._assign(_monotonic())
        self._poke()

    def _drain_closing(self) -> list[tuple[C, ConnectionClosedReason]]:
        closing = self._book.closing
        self._book.closing = []
        return closing

    def _close_discarded(self) -> None:
        closing = self._drain_closing()
        for conn, reason in closing:
            self._close_connection(conn, reason, None)
        if closing:
            self._poke()

    def _close_connection(
        self, conn: C, reason: ConnectionClosedReason, error: BaseException | None
    ) -> None:
        self._emit_closed(conn.id, reason, error)
        _abort(conn)

    def _observed(self) -> bool:
        return self._listener is not None or _log_enabled(_DEBUG)

    def _emit(self, event: PoolEvent) -> None:
        if LOGGER.isEnabledFor(_DEBUG):
            LOGGER.debug(log_message(event))
        if self._listener is not None:
            try:
                self._listener(event)
            except Exception:
                LOGGER.exception("CMAP event listener failed on %r", event)

    def _emit_closed(
        self, conn_id: int, reason: ConnectionClosedReason, error: BaseException | None
    ) -> None:
        if self._observed():
            self._emit(ConnectionClosedEvent(self.address, conn_id, reason, error))

    def _emit_checked_out(self, conn: C, start: float) -> None:
        self._emit(ConnectionCheckedOutEvent(self.address, conn.id, _ms_since(start)))

    def _emit_checkout_failed(
        self, start: float, reason: ConnectionCheckOutFailedReason, error: BaseException | None
    ) -> None:
        if self._observed():
            self._emit(ConnectionCheckOutFailedEvent(self.address, reason, _ms_since(start), error))

    def _in_use_by(self) -> str:
        """Load balancers spec: a wait queue timeout says who holds the connections."""
        if not self.options.load_balanced:
            return ""
        counts = self.pinned_counts()
        cursors, transactions = counts[Pinned.CURSOR], counts[Pinned.TRANSACTION]
        other = len(self._book.in_use) - cursors - transactions
        return (
            f", connections in use by cursors: {cursors}, connections in use by transactions: "
            f"{transactions}, connections in use by other operations: {other}"
        )

    def _checkout_failed(
        self,
        start: float,
        reason: ConnectionCheckOutFailedReason,
        error: BaseException | None,
        budget_ms: float | None = None,
    ) -> BaseException:
        """The error for a failed checkout, after emitting ConnectionCheckOutFailed;
        ``budget_ms``: the operation's timeoutMS left for a wait that it ended."""
        where = format_address(self.address)
        exc: BaseException
        if reason is ConnectionCheckOutFailedReason.POOL_CLOSED:
            exc = PoolClosedError(
                f"Attempted to check out a connection from closed connection pool {where}"
            )
        elif reason is ConnectionCheckOutFailedReason.TIMEOUT and budget_ms is not None:
            exc = WaitQueueTimeoutError(
                f"Timed out while checking out a connection from connection pool {where} "
                f"within the operation's timeoutMS (phase: checkout, "
                f"{max(budget_ms, 0):.0f} ms left for it; maxPoolSize: "
                f"{self.options.max_pool_size}{self._in_use_by()})"
            )
        elif reason is ConnectionCheckOutFailedReason.TIMEOUT:
            exc = WaitQueueTimeoutError(
                f"Timed out while checking out a connection from connection pool {where} "
                f"(maxPoolSize: {self.options.max_pool_size}{self._in_use_by()}, "
                f"waitQueueTimeoutMS: {self.options.wait_queue_timeout_ms})"
            )
        else:
            exc = PoolClearedError(self._cleared_message)
        self._emit_checkout_failed(start, reason, error if error is not None else exc)
        return exc


class _Checkout(Generic[C]):
    """The ``async with pool.checkout()`` context."""

    __slots__ = ("_conn", "_deadline", "_pool")

    def __init__(self, pool: Pool[C], deadline: float | None) -> None:
        self._pool = pool
        self._deadline = deadline
        self._conn: C | None = None

    async def __aenter__(self) -> C:
        self._conn = await self._pool.check_out(self._deadline)
        return self._conn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn = self._conn
        self._conn = None
        if conn is None:
            return
        if exc is None or isinstance(exc, Exception):
            self._pool.check_in(conn)
        else:
            self._pool.discard(conn, exc)


def _failed_reason(closed: bool) -> ConnectionCheckOutFailedReason:
    if closed:
        return ConnectionCheckOutFailedReason.POOL_CLOSED
    return ConnectionCheckOutFailedReason.CONNECTION_ERROR


def _is_done(waiter: asyncio.Future[Any]) -> bool:
    return waiter.done()


def _granted(waiter: asyncio.Future[Any]) -> bool:
    return waiter.done() and not waiter.cancelled() and waiter.exception() is None


def _abort(conn: PoolConnection) -> None:
    try:
        conn.close()
    except Exception:
        LOGGER.debug("closing connection %s failed", conn.id, exc_info=True)


def _ms_since(start: float) -> float:
    return (_monotonic() - start) * 1000


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
