"""TopologySettings: the client options SDAM and server selection need, validated once.

Built from the parsed connection string (``from_options``) or directly. The initial
TopologyType follows SDAM "Initial TopologyType"; invalid combinations ("Allowed configuration
combinations") raise ConfigurationError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from asyncmongo.core.address import Address
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.errors import ConfigurationError

if TYPE_CHECKING:
    from asyncmongo.core.uri.client_options import ClientOptions

MIN_HEARTBEAT_FREQUENCY_MS: Final = 500
DEFAULT_HEARTBEAT_FREQUENCY_MS: Final = 10_000
DEFAULT_LOCAL_THRESHOLD_MS: Final = 15
DEFAULT_SERVER_SELECTION_TIMEOUT_MS: Final = 30_000


@dataclass(frozen=True, slots=True)
class TopologySettings:
    """Seeds and the options that shape discovery and selection."""

    seeds: tuple[Address, ...]
    replica_set_name: str | None = None
    direct_connection: bool | None = None
    load_balanced: bool = False
    heartbeat_frequency_ms: int = DEFAULT_HEARTBEAT_FREQUENCY_MS
    local_threshold_ms: int = DEFAULT_LOCAL_THRESHOLD_MS
    server_selection_timeout_ms: int = DEFAULT_SERVER_SELECTION_TIMEOUT_MS
    srv_max_hosts: int = 0

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ConfigurationError("need at least one seed address")
        if self.direct_connection and len(self.seeds) > 1:
            raise ConfigurationError("directConnection=true cannot be used with multiple seeds")
        if self.load_balanced and self.direct_connection:
            raise ConfigurationError("loadBalanced=true cannot be used with directConnection=true")
        if self.load_balanced and self.replica_set_name is not None:
            raise ConfigurationError("loadBalanced=true cannot be used with replicaSet")
        if self.load_balanced and len(self.seeds) > 1:
            raise ConfigurationError("loadBalanced=true requires exactly one host")
        if self.heartbeat_frequency_ms < MIN_HEARTBEAT_FREQUENCY_MS:
            raise ConfigurationError(
                f"heartbeatFrequencyMS must be at least {MIN_HEARTBEAT_FREQUENCY_MS}"
            )
        if self.local_threshold_ms < 0:
            raise ConfigurationError("localThresholdMS must not be negative")

    @classmethod
    def from_options(cls, options: ClientOptions) -> TopologySettings:
        """From a parsed connection string (``asyncmongo.core.uri.parse``)."""
        return cls(
            seeds=tuple(options.hosts),
            replica_set_name=options.replica_set,
            direct_connection=options.direct_connection,
            load_balanced=options.load_balanced,
            heartbeat_frequency_ms=options.heartbeat_frequency_ms,
            local_threshold_ms=options.local_threshold_ms,
            server_selection_timeout_ms=options.server_selection_timeout_ms,
            srv_max_hosts=options.srv_max_hosts,
        )

    @property
    def initial_topology_type(self) -> TopologyType:
        """SDAM "Initial TopologyType" (an unspecified directConnection means false)."""
        if self.load_balanced:
            return TopologyType.LOAD_BALANCED
        if self.direct_connection:
            return TopologyType.SINGLE
        if self.replica_set_name is not None:
            return TopologyType.REPLICA_SET_NO_PRIMARY
        return TopologyType.UNKNOWN
