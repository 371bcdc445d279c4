"""ShutdownGuard: close what an application forgot to close when its event loop ends.

An application that never closes its client (common in scripts and tests) used to leave
its pooled sockets to the garbage collector, which warns "unclosed transport" for each.
``asyncio.run`` (and pytest-asyncio, and uvloop's runner) end a loop by cancelling every
task and then calling ``loop.shutdown_asyncgens()``, which closes every async generator the
loop has seen while the loop still runs. The guard is such a generator: it is started when
the client connects and, closed by the loop at shutdown, runs the client's cleanup there,
so the sockets close properly and nothing is left for the collector. A client closed by
the application disarms it first, and the guard then does nothing.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable

__all__ = ["ShutdownGuard"]


class ShutdownGuard:
    """Runs ``cleanup`` when the running loop shuts its async generators down, unless
    :meth:`disarm` ran first."""

    __slots__ = ("_armed", "_cleanup", "_generator")

    def __init__(self, cleanup: Callable[[], Awaitable[None]]) -> None:
        self._cleanup = cleanup
        self._armed = False
        self._generator: AsyncGenerator[None, None] | None = None

    async def arm(self) -> None:
        """Start watching the running loop (its async-generator hooks now know the guard)."""
        if self._generator is not None:
            return
        self._armed = True
        self._generator = self._watch()
        await self._generator.asend(None)

    async def disarm(self) -> None:
        """The application closed the client itself: stop watching."""
        self._armed = False
        generator, self._generator = self._generator, None
        if generator is not None:
            await generator.aclose()

    async def _watch(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._armed:
                self._armed = False
                await self._cleanup()
