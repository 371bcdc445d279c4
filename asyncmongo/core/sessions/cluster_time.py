"""``$clusterTime`` gossip and operationTime (sessions and causal-consistency specs).

Drivers track the greatest ``$clusterTime`` document seen (from any reply, per client and per
session) and send it with every command to a deployment that supports it; the greatest is the
one with the greatest ``clusterTime`` Timestamp. A causally consistent session also tracks
the greatest ``operationTime`` it has seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.types import Timestamp

__all__ = ["cluster_time_of", "greater_cluster_time", "greater_operation_time"]


def _timestamp(cluster_time: Mapping[str, Any] | None) -> Timestamp | None:
    if cluster_time is None:
        return None
    value = cluster_time.get("clusterTime")
    return value if isinstance(value, Timestamp) else None


def greater_cluster_time(
    current: Mapping[str, Any] | None, other: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """The ``$clusterTime`` document with the greater ``clusterTime`` (``current`` on ties;
    a document without a Timestamp never wins)."""
    other_time = _timestamp(other)
    if other_time is None:
        return current
    current_time = _timestamp(current)
    if current_time is None or other_time > current_time:
        return other
    return current


def greater_operation_time(current: Timestamp | None, other: Any) -> Timestamp | None:
    """The greater operationTime (a non-Timestamp ``other`` is ignored)."""
    if not isinstance(other, Timestamp):
        return current
    if current is None or other > current:
        return other
    return current


def cluster_time_of(reply: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The reply's ``$clusterTime`` document, if it has a well-formed one."""
    value = reply.get("$clusterTime")
    if isinstance(value, Mapping) and _timestamp(value) is not None:
        return value
    return None
