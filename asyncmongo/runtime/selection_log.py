"""Server selection's words: the log messages of one selection and the timeout error.

Server Selection Logging: "Server selection started / succeeded / failed" at DEBUG and
"Waiting for suitable server to become available" once per operation at INFO, each with the
selector, the operation (and its id) and the topology description. The timeout error says
which servers there are and why none suited, so a user can act on it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from asyncmongo.core.address import format_address
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.core.selection import Mode, Operation, Selection
from asyncmongo.errors import ServerSelectionTimeoutError
from asyncmongo.runtime import sdam_log

__all__ = ["SelectionLog", "describe_selection", "selection_timeout_error", "why_none_suits"]


class HasDescription(Protocol):
    """The topology, as the log sees it: its id and the current description."""

    @property
    def description(self) -> TopologyDescription: ...

    @property
    def topology_id(self) -> object: ...


class SelectionLog:
    """The server-selection log messages of one selection (DEBUG, "waiting" at INFO)."""

    __slots__ = ("_operation", "_operation_id", "_selector", "_topology")

    def __init__(
        self, topology: HasDescription, operation: str, selector: str, operation_id: int | None
    ) -> None:
        self._topology = topology
        self._operation = operation
        self._selector = selector
        self._operation_id = operation_id

    def __call__(self, message: str, *, level: int = logging.DEBUG, **details: Any) -> None:
        logger = sdam_log.SELECTION_LOGGER
        if logger.isEnabledFor(level):
            description = repr(self._topology.description)
            entry = sdam_log.selection(
                message,
                self._operation,
                self._selector,
                description,
                operation_id=self._operation_id,
                topology_id=self._topology.topology_id,
                **details,
            )
            logger.log(level, entry)


def describe_selection(selection: Selection) -> str:
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
