"""Helpers shared by the topology tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from asyncmongo.runtime.monitor import Monitor
from asyncmongo.runtime.topology import Topology


async def wait_until(predicate: Callable[[], object], within: float = 2.0) -> None:
    """Poll ``predicate`` (a test's observer only: the driver itself never polls)."""
    async with asyncio.timeout(within):
        while not predicate():  # noqa: ASYNC110 (observing from outside, on purpose)
            await asyncio.sleep(0.002)


def monitors(topology: Topology) -> list[Monitor]:
    """Every server's monitor."""
    return [s.monitor for s in topology.servers.values() if s.monitor is not None]
