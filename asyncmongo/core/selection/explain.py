"""Server selection in words: what a selection asks for, and why none of the servers suited.

The topology names the selection in its log messages with :func:`describe_selection`, and
raises :func:`selection_timeout_error` when nothing suited in time: the error says which
servers there are and why none suited, so a user can act on it.
"""

from __future__ import annotations

from asyncmongo.core.address import format_address
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.core.selection.read_preference import Mode
from asyncmongo.core.selection.server_selector import Selection
from asyncmongo.core.selection.suitability import Operation
from asyncmongo.errors import ServerSelectionTimeoutError

__all__ = ["describe_selection", "selection_timeout_error", "why_none_suits"]


def describe_selection(selection: Selection) -> str:
    """What ``selection`` asks for: the selector of the log messages and the timeout error."""
    if selection.operation is Operation.WRITE:
        return "a write (the primary or a mongos/standalone)"
    return f"a read with {selection.read_preference!r}"


def why_none_suits(description: TopologyDescription, selection: Selection) -> str:
    """The reason, in words, that ``select_server`` found nothing."""
    servers = list(description.servers.values())
    if not servers:
        return "the topology has no servers"
    known = [s for s in servers if s.is_known]
    if not known:
        return "no server is reachable (every server is Unknown)"
    needs_primary = (
        selection.operation is Operation.WRITE or selection.read_preference.mode is Mode.PRIMARY
    )
    if description.topology_type.is_replica_set and needs_primary:
        return "the replica set has no primary"
    kinds = ", ".join(sorted({s.server_type.value for s in known}))
    if all(s.server_type is ServerType.RS_ARBITER for s in known):
        return "only arbiters are reachable"
    return f"no reachable server ({kinds}) matches the read preference"


def selection_timeout_error(
    description: TopologyDescription, selection: Selection, timeout_ms: int
) -> ServerSelectionTimeoutError:
    """The error for a selection that found nothing in time, with per-server errors."""
    errors = {format_address(a): s.error for a, s in description.servers.items() if s.error}
    message = (
        f"No server suitable for {describe_selection(selection)} within {timeout_ms} ms "
        f"(or the operation's timeout): {why_none_suits(description, selection)}. "
        f"Topology: {description!r}"
    )
    return ServerSelectionTimeoutError(message, errors)
