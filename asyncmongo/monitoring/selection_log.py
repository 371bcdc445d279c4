"""Server selection log messages (specs/logging, Server Selection Logging).

"Server selection started / succeeded / failed" at DEBUG and "Waiting for suitable server to
become available" once per operation at INFO, on "asyncmongo.serverSelection", each with the
selector, the operation (and its id) and the topology description. The topology passes itself
as :class:`HasDescription`: the log reads only its id and its current description.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from asyncmongo.core.address import Address
from asyncmongo.core.cmap.log_messages import LogMessage, format_error
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.monitoring.sdam_log import server_fields

__all__ = ["SELECTION_LOGGER", "HasDescription", "SelectionLog", "selection_message"]

SELECTION_LOGGER = logging.getLogger("asyncmongo.serverSelection")


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
        if SELECTION_LOGGER.isEnabledFor(level):
            description = repr(self._topology.description)
            entry = selection_message(
                message,
                self._operation,
                self._selector,
                description,
                operation_id=self._operation_id,
                topology_id=self._topology.topology_id,
                **details,
            )
            SELECTION_LOGGER.log(level, entry)


def selection_message(
    message: str,
    operation: str,
    selector: str,
    topology: str,
    *,
    address: Address | None = None,
    failure: BaseException | None = None,
    remaining_ms: float | None = None,
    operation_id: int | None = None,
    topology_id: object = None,
) -> LogMessage:
    """One of the four Server Selection log messages ("Server selection started", ...).

    Besides the spec's fields, a message carries the ``topologyId`` of the client that
    selects (as the SDAM messages do), so that with several clients in one process each
    selection's messages can be told apart; the spec's matching allows extra fields.
    """
    fields: dict[str, Any] = {
        "message": message,
        "selector": selector,
        "operation": operation,
        "topologyDescription": topology,
    }
    if topology_id is not None:
        fields["topologyId"] = str(topology_id)
    ident = ""
    if operation_id is not None:
        fields["operationId"] = operation_id
        ident = f" with ID {operation_id}"
    text = (
        f"{message} for operation {operation}{ident}. Selector: {selector}, "
        f"topology: {topology}"
    )
    if address is not None:
        where = server_fields(fields, address)
        text += f". Selected server: {where}"
    if failure is not None:
        fields["failure"] = format_error(failure)
        text += f". Failure: {fields['failure']}"
    if remaining_ms is not None:
        fields["remainingTimeMS"] = int(remaining_ms)
        text += f". Remaining time: {int(remaining_ms)} ms"
    return LogMessage(fields, text)
