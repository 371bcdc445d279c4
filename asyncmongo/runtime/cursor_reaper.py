"""CursorReaper: the killCursors of cursors the application dropped while they were open.

A cursor neither exhausted nor closed (``first = await coll.find(q).next()``, or
``to_list(10)`` of a larger result, and the cursor dropped) leaves the executor holding what
its getMores would have needed: its implicit session (the server session never goes back to
the pool) and, behind a load balancer, its pinned connection; on the server the cursor lives
on until the idle-cursor timeout. Nothing can be awaited in ``__del__``, so the cursor hands
its killCursors to the reaper, which sends them from one task of the client's task set (as
PyMongo's periodic executor sends the cursors its ``__del__`` queues). The executor then
forgets the cursor (``Executor.kill_dropped``). A cursor of an explicit session is only
forgotten: the session is the application's, and ending it ends its cursors on the server.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine
from typing import Any

from asyncmongo.core.operations.cursors import KillCursors
from asyncmongo.runtime.executor import Executor

__all__ = ["CursorReaper"]

#: The task set's ``spawn_unless_closed``: the task, or None once the client is closing.
Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None] | None"]


class CursorReaper:
    """Sends the killCursors of dropped cursors, one after the other, in a client task.

    ``timeout_ms`` is the client's timeoutMS (None: unset), which bounds each killCursors
    as it bounds ``cursor.close()``'s."""

    __slots__ = ("_dropped", "_executor", "_loop", "_reaping", "_spawn", "_timeout_ms")

    def __init__(
        self,
        executor: Executor,
        spawn: Spawn,
        loop: asyncio.AbstractEventLoop,
        timeout_ms: int | None,
    ) -> None:
        self._executor = executor
        self._spawn = spawn
        self._loop = loop
        self._timeout_ms = timeout_ms
        self._dropped: list[KillCursors] = []
        #: A reaping task is running or scheduled to start.
        self._reaping = False

    def __repr__(self) -> str:
        state = "reaping" if self._reaping else "idle"
        return f"<CursorReaper {state}, {len(self._dropped)} queued>"

    def drop(self, kill: KillCursors) -> None:
        """Queue ``kill``; called from a cursor's ``__del__``, so on any thread and at any
        moment (never raising: a loop already closed leaves the cursor to the server)."""
        self._dropped.append(kill)
        if self._reaping:
            return
        self._reaping = True
        try:
            if asyncio._get_running_loop() is self._loop:
                self._start()
            else:
                self._loop.call_soon_threadsafe(self._start)
        except RuntimeError:  # the loop is closed: nothing will run again
            self._dropped.clear()
            self._reaping = False

    def _start(self) -> None:
        if self._spawn(self._reap(), "asyncmongo-cursor-reaper") is None:
            self._dropped.clear()  # the client is closing: its close ends what is left
            self._reaping = False

    async def _reap(self) -> None:
        dropped = self._dropped
        try:
            while dropped:
                await self._executor.kill_dropped(dropped.pop(0), self._deadline())
        finally:
            self._reaping = False
        if dropped:  # dropped between the last check and the end of the loop
            self._reaping = True
            self._start()

    def _deadline(self) -> float | None:
        timeout_ms = self._timeout_ms
        if timeout_ms is None:
            return None
        return math.inf if not timeout_ms else self._loop.time() + timeout_ms / 1000
