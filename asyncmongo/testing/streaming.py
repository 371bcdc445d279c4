"""``topologyVersion`` and the awaitable hello (SDAM spec, "Streaming isMaster").

A member's :class:`TopologyClock` holds its ``processId`` (new on every restart) and a counter
bumped on every state change. An awaitable hello names the ``topologyVersion`` the client last
saw and a ``maxAwaitTimeMS``: if the member has moved on since, the reply is immediate;
otherwise it waits until the next change or until the time is up, then replies with the current
state. Waiters are woken by one :class:`asyncio.Event` per version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from asyncmongo.bson import ObjectId


class TopologyClock:
    """A member's topology version and the waiters for its next change."""

    __slots__ = ("_changed", "counter", "process_id")

    def __init__(self) -> None:
        self.process_id = ObjectId()
        self.counter = 0
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        return f"<TopologyClock {self.process_id} #{self.counter}>"

    def bump(self) -> None:
        """A state change: counter + 1, and every awaitable hello answers now."""
        self.counter += 1
        self._wake()

    def restart(self) -> None:
        """A new process: new processId, counter from 0."""
        self.process_id = ObjectId()
        self.counter = 0
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def is_current(self, topology_version: Any) -> bool:
        """True if the client's ``topologyVersion`` is this member's current one (wait)."""
        if not isinstance(topology_version, Mapping):
            return False
        counter = topology_version.get("counter")
        return (topology_version.get("processId") == self.process_id
                and counter is not None and int(counter) >= self.counter)

    async def wait_for_change(self, topology_version: Any, max_await_ms: float) -> None:
        """Return when the version moves past ``topology_version`` or the time is up."""
        if not self.is_current(topology_version):
            return
        changed = self._changed
        try:
            await asyncio.wait_for(changed.wait(), max(max_await_ms, 0) / 1000)
        except TimeoutError:
            return


def awaitable_hello(command: Mapping[str, Any]) -> tuple[Any, float] | None:
    """``(topologyVersion, maxAwaitTimeMS)`` if the hello is awaitable, else None."""
    tv = command.get("topologyVersion")
    wait = command.get("maxAwaitTimeMS")
    if tv is None or wait is None:
        return None
    return tv, float(wait)
