"""The latency window and the power of two random choices (Server Selection).

The window spans from the lowest average RTT among the suitable servers to that plus
localThresholdMS. Within it, two servers are drawn at random and the one running fewer
operations wins ("operationCount-based selection within the latency window"); the random
number generator is injected so tests are deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from asyncmongo.core.address import Address
from asyncmongo.core.sdam.server_description import ServerDescription


def in_latency_window(
    servers: Sequence[ServerDescription], local_threshold_ms: float
) -> list[ServerDescription]:
    """The servers whose average RTT is within localThresholdMS of the fastest one."""
    if len(servers) <= 1:
        return list(servers)
    fastest = min(_rtt(s) for s in servers)
    return [s for s in servers if _rtt(s) <= fastest + local_threshold_ms]


def choose_by_operation_count(
    servers: Sequence[ServerDescription],
    operation_counts: Mapping[Address, int],
    rng: random.Random,
) -> ServerDescription:
    """Power of two random choices: of two random servers, the one with fewer operations."""
    if not servers:
        raise ValueError("choose_by_operation_count needs at least one server")
    if len(servers) == 1:
        return servers[0]
    first, second = rng.sample(list(servers), 2)
    if operation_counts.get(second.address, 0) < operation_counts.get(first.address, 0):
        return second
    return first


def _rtt(server: ServerDescription) -> float:
    # A server without an RTT (a load balancer) counts as the fastest.
    return server.round_trip_time_ms or 0.0
