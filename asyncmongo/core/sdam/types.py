"""The SDAM enums: what a server is (ServerType) and what the deployment is (TopologyType)."""

from __future__ import annotations

from enum import Enum


class ServerType(Enum):
    """SDAM ServerType, parsed from a hello reply (or Unknown after an error)."""

    UNKNOWN = "Unknown"
    STANDALONE = "Standalone"
    MONGOS = "Mongos"
    POSSIBLE_PRIMARY = "PossiblePrimary"
    RS_PRIMARY = "RSPrimary"
    RS_SECONDARY = "RSSecondary"
    RS_ARBITER = "RSArbiter"
    RS_OTHER = "RSOther"
    RS_GHOST = "RSGhost"
    LOAD_BALANCER = "LoadBalancer"

    @property
    def is_known(self) -> bool:
        """False for Unknown and PossiblePrimary (which async clients treat as Unknown)."""
        return self not in (ServerType.UNKNOWN, ServerType.POSSIBLE_PRIMARY)

    @property
    def is_data_bearing(self) -> bool:
        """SDAM "data-bearing server type": may answer reads."""
        return self in _DATA_BEARING

    @property
    def is_rs_member(self) -> bool:
        """RSSecondary, RSArbiter or RSOther: the members handled by updateRSWithoutPrimary."""
        return self in (ServerType.RS_SECONDARY, ServerType.RS_ARBITER, ServerType.RS_OTHER)


_DATA_BEARING = frozenset(
    {
        ServerType.STANDALONE,
        ServerType.MONGOS,
        ServerType.RS_PRIMARY,
        ServerType.RS_SECONDARY,
        ServerType.LOAD_BALANCER,
    }
)


class TopologyType(Enum):
    """SDAM TopologyType."""

    UNKNOWN = "Unknown"
    SINGLE = "Single"
    REPLICA_SET_NO_PRIMARY = "ReplicaSetNoPrimary"
    REPLICA_SET_WITH_PRIMARY = "ReplicaSetWithPrimary"
    SHARDED = "Sharded"
    LOAD_BALANCED = "LoadBalanced"

    @property
    def is_replica_set(self) -> bool:
        return self in (TopologyType.REPLICA_SET_NO_PRIMARY, TopologyType.REPLICA_SET_WITH_PRIMARY)
