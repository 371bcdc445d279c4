"""Helpers shared by the topology tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_until(predicate: Callable[[], object], timeout: float = 2.0) -> None:
    """Poll ``predicate`` (tests only: the driver itself never polls)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.002)
