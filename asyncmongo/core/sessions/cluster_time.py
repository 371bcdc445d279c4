"""``$clusterTime`` gossip and operationTime (sessions and causal-consistency specs).

Drivers track the greatest ``$clusterTime`` document seen (from any reply, per client and per
session) and send it with every command to a deployment that supports it; the greatest is the
one with the greatest ``clusterTime`` Timestamp. A causally consistent session also tracks
the greatest ``operationTime`` it has seen.

Replies may hold any Timestamp class following PyMongo's type-marker protocol (the
PyMongo-compatible client decodes into PyMongo's): those are compared by their time and
increment, and kept as they came.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.types import Timestamp

__all__ = ["as_timestamp", "cluster_time_of", "greater_cluster_time", "greater_operation_time"]

#: The type marker of a BSON Timestamp (PyMongo's ``_type_marker`` protocol).
_TIMESTAMP_MARKER = 17


def as_timestamp(value: Any) -> Timestamp | None:
    """``value`` as asyncmongo's Timestamp if it is one or a Timestamp of another class
    (PyMongo's, by its type marker); None otherwise."""
    if isinstance(value, Timestamp):
        return value
    if getattr(value, "_type_marker", None) == _TIMESTAMP_MARKER:
        return Timestamp(value.time, value.inc)
    return None


def _timestamp(cluster_time: Mapping[str, Any] | None) -> Timestamp | None:
    if cluster_time is None:
        return None
    return as_timestamp(cluster_time.get("clusterTime"))


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


def greater_operation_time(current: Any, other: Any) -> Any:
    """The greater operationTime, as it came (a non-Timestamp ``other`` is ignored)."""
    other_time = as_timestamp(other)
    if other_time is None:
        return current
    current_time = as_timestamp(current)
    if current_time is None or other_time > current_time:
        return other
    return current


def cluster_time_of(reply: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The reply's ``$clusterTime`` document, if it has a well-formed one."""
    value = reply.get("$clusterTime")
    if isinstance(value, Mapping) and _timestamp(value) is not None:
        return value
    return None
