"""The simulated server (:class:`SimServer`), split by job as the driver is.

``sim_server`` wires the parts and is the public surface; ``network`` listens, accepts
connections and writes replies; ``faults`` holds the fail points and network faults; ``role``
answers what differs by role (hello, topologyVersion, refusals, replication); ``dispatch``
routes each request and shapes the reply; ``commands`` runs a command against the built-ins
and the store; ``command_fields`` says what the server reads off a command.
"""

from asyncmongo.testing.server.faults import FailPointHandle, ReplyFault
from asyncmongo.testing.server.sim_server import ServerStatistics, SimServer

__all__ = ["FailPointHandle", "ReplyFault", "ServerStatistics", "SimServer"]
