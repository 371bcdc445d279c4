"""Server: the runtime state of one server of the topology.

Its connection pool, its monitors (none in load-balanced mode), the RTT statistics both
monitors feed, and the number of operations in flight on it (server selection's "power of two
random choices" picks the less busy of two). The topology creates a Server when an address
joins the description and closes it when the address leaves.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.sdam.rtt import RttStats

if TYPE_CHECKING:
    from asyncmongo.runtime.connection import Connection, ConnectionSettings
    from asyncmongo.runtime.pool import Pool

__all__ = ["Server", "ServerMonitor"]


class ServerMonitor(Protocol):
    """What a Server needs of its monitor (runtime.monitor.Monitor): the lifecycle the
    server drives, and the connection settings the client swaps through it."""

    def start(self) -> None: ...

    def request_check(self) -> None: ...

    def cancel_check(self) -> None: ...

    async def close(self) -> None: ...

    @property
    def connection_settings(self) -> ConnectionSettings: ...

    @connection_settings.setter
    def connection_settings(self, settings: ConnectionSettings) -> None: ...


class Server:
    """One server's pool, monitor and counters."""

    __slots__ = ("_closed", "address", "monitor", "operation_count", "pool", "rtt")

    def __init__(
        self, address: Address, pool: Pool[Connection], monitor: ServerMonitor | None
    ) -> None:
        self.address = address
        self.pool = pool
        self.monitor = monitor
        self.rtt = RttStats()
        self.operation_count = 0
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"<Server {format_address(self.address)}: {self.operation_count} in flight, "
            f"{self.pool!r}, {self.monitor!r}>"
        )

    def start(self) -> None:
        """Start monitoring; a server without a monitor (load balancer) is usable at once."""
        if self.monitor is not None:
            self.monitor.start()
        else:
            self.pool.ready()

    def request_check(self) -> None:
        """Ask the monitor for an immediate check (ignored while one is running)."""
        if self.monitor is not None:
            self.monitor.request_check()

    def cancel_check(self) -> None:
        """An application saw a network error: interrupt the monitor's current check."""
        if self.monitor is not None:
            self.monitor.cancel_check()

    async def close(self) -> None:
        """Stop the monitors, then close the pool; every step runs even if one fails."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.monitor is not None:
                await self.monitor.close()
        finally:
            await asyncio.shield(self.pool.close())
