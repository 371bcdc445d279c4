"""Fake connections and a fake establish factory for the pool tests (no I/O)."""

from __future__ import annotations

import asyncio
import random

from asyncmongo.errors import AutoReconnect

ADDRESS = ("a", 27017)


async def yields(count: int) -> None:
    """Give the loop ``count`` turns."""
    for _ in range(count):
        await asyncio.sleep(0)


class FakeConnection:
    """A pooled connection stand-in: an id, a service id, and a closed flag."""

    def __init__(self, connection_id: int, service_id: object = None, close_yields: int = 0):
        self.id = connection_id
        self.service_id = service_id
        self.closed = False
        self._close_yields = close_yields

    @property
    def is_closed(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        await yields(self._close_yields)
        self.closed = True


class FakeServer:
    """The ``establish`` factory: records what it made, can be slow, fail, or be cancelled."""

    def __init__(
        self,
        *,
        rng: random.Random | None = None,
        failure_rate: float = 0.0,
        delay_yields: int = 0,
        close_yields: int = 0,
        service_id: object = None,
    ) -> None:
        self.rng = rng or random.Random(0)
        self.failure_rate = failure_rate
        self.delay_yields = delay_yields
        self.close_yields = close_yields
        self.service_id = service_id
        self.created: list[FakeConnection] = []
        self.failures = 0
        #: Fail this many establishments (after the delay) regardless of failure_rate.
        self.fail_next = 0
        self.cancelled_establishments = 0

    async def establish(self, connection_id: int) -> FakeConnection:
        try:
            await yields(self.rng.randint(0, self.delay_yields) if self.rng else 0)
            if self.delay_yields and self.failure_rate == 0.0:
                await yields(self.delay_yields)
        except asyncio.CancelledError:
            self.cancelled_establishments += 1
            raise
        if self.fail_next > 0 or self.rng.random() < self.failure_rate:
            self.fail_next = max(0, self.fail_next - 1)
            self.failures += 1
            raise AutoReconnect(f"connection {connection_id} refused")
        conn = FakeConnection(connection_id, self.service_id, self.close_yields)
        self.created.append(conn)
        return conn

    def open_connections(self) -> list[FakeConnection]:
        return [c for c in self.created if not c.closed]
