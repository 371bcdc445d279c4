"""TaskSet: the client's background tasks (monitors, RTT monitors, SRV poller, pool fillers).

Every task the driver starts lives here, is created in a clean ``contextvars.Context`` (so a
task started while serving one request does not carry that request's context variables for
the life of the client) and is cancelled and awaited by ``close()``. No task is left to the
garbage collector (STYLE: "No orphan tasks").
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from asyncmongo.errors import InvalidOperation

__all__ = ["TaskSet"]

LOGGER = logging.getLogger("asyncmongo.tasks")
T = TypeVar("T")


class TaskSet:
    """A set of owned tasks on one event loop."""

    __slots__ = ("_closed", "_loop", "_tasks")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<TaskSet {state}, {len(self._tasks)} tasks>"

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Task[T]:
        """Start ``coro`` as an owned task in a fresh context."""
        if self._closed:
            coro.close()
            raise InvalidOperation("the client is closed: no new background task may start")
        task = self._loop.create_task(coro, name=name, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def spawn_unless_closed(
        self, coro: Coroutine[Any, Any, T], name: str | None = None
    ) -> asyncio.Task[T] | None:
        """``spawn``, or drop ``coro`` once the set is closed (callbacks racing ``close()``)."""
        if self._closed:
            coro.close()
            return None
        return self.spawn(coro, name)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            LOGGER.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def close(self) -> None:
        """Cancel every task and wait until all have ended (shielded from our own cancel)."""
        self._closed = True
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.shield(asyncio.gather(*tasks, return_exceptions=True))
