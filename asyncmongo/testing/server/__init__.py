"""The simulated server: :class:`SimServer` and the names that come with it.

``sim_server`` holds the server; ``network`` listens, accepts and writes replies; ``faults``
holds the fail points and network faults; ``role`` answers what differs by role (hello,
topologyVersion, refusals, replication); ``command_fields`` says what the server reads off a
command.
"""

from asyncmongo.testing.server.faults import FailPointHandle, ReplyFault
from asyncmongo.testing.server.sim_server import ServerStatistics, SimServer

__all__ = ["FailPointHandle", "ReplyFault", "ServerStatistics", "SimServer"]
