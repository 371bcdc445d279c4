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
    description: TopologyDescription,
    selection: Selection,
    timeout_ms: int,
    operation_budget_ms: float | None = None,
) -> ServerSelectionTimeoutError:
    """The error for a selection that found nothing in time, with per-server errors;
    ``operation_budget_ms``: the operation's timeoutMS left for selection, when it (not
    serverSelectionTimeoutMS) ended the wait."""
    errors = {format_address(a): s.error for a, s in description.servers.items() if s.error}
    if operation_budget_ms is None:
        limit = f"within {timeout_ms} ms (or the operation's timeout)"
    else:
        limit = (f"within the operation's timeoutMS (phase: selection, "
                 f"{operation_budget_ms:.0f} ms left for it)")
    message = (
        f"No server suitable for {describe_selection(selection)} {limit}: "
        f"{why_none_suits(description, selection)}. Topology: {description!r}"
    )
    return ServerSelectionTimeoutError(message, errors)
