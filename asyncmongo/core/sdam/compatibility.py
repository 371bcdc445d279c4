"""Wire-version compatibility (SDAM "Checking wire protocol compatibility").

The client speaks wire versions CLIENT_MIN_WIRE_VERSION..CLIENT_MAX_WIRE_VERSION (MongoDB 4.2
through 8.2); a known server whose range does not overlap makes the topology incompatible,
and every operation fails with the message computed here until that changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from asyncmongo.core.address import format_address
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.types import ServerType

DRIVER_NAME: Final = "asyncmongo"
CLIENT_MIN_WIRE_VERSION: Final = 8
CLIENT_MAX_WIRE_VERSION: Final = 27

#: maxWireVersion -> the MongoDB release that introduced it, for the "too old" message.
MONGODB_VERSION_BY_WIRE: Final = {
    6: "3.6", 7: "4.0", 8: "4.2", 9: "4.4", 13: "5.0", 14: "5.1", 17: "6.0", 21: "7.0",
    25: "8.0", 26: "8.1", 27: "8.2",
}  # fmt: skip


def compatibility_error(
    server: ServerDescription,
    min_wire_version: int = CLIENT_MIN_WIRE_VERSION,
    max_wire_version: int = CLIENT_MAX_WIRE_VERSION,
) -> str | None:
    """The spec's error message when ``server`` cannot be used by this client, else None."""
    if not server.is_known or server.server_type is ServerType.LOAD_BALANCER:
        return None
    where = format_address(server.address)
    server_min = server.min_wire_version or 0
    server_max = server.max_wire_version or 0
    if server_min > max_wire_version:
        return (
            f"Server at {where} requires wire version {server_min}, but this version of "
            f"{DRIVER_NAME} only supports up to {max_wire_version}."
        )
    if server_max < min_wire_version:
        release = MONGODB_VERSION_BY_WIRE.get(min_wire_version, "?")
        return (
            f"Server at {where} reports wire version {server_max}, but this version of "
            f"{DRIVER_NAME} requires at least {min_wire_version} (MongoDB {release})."
        )
    return None


def first_compatibility_error(servers: Iterable[ServerDescription]) -> str | None:
    """The first incompatibility among ``servers`` (None when the topology is compatible)."""
    for server in servers:
        error = compatibility_error(server)
        if error is not None:
            return error
    return None
