"""The simulated server: :class:`SimServer` and the names that come with it."""

from asyncmongo.testing.server.sim_server import (
    FailPointHandle,
    ReplyFault,
    ServerStatistics,
    SimServer,
)

__all__ = ["FailPointHandle", "ReplyFault", "ServerStatistics", "SimServer"]
