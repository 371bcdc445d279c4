"""Write concern as a replica set enforces it: how many members must acknowledge a write, and
the reply when they cannot (pure: the server supplies which members are reachable).

- ``w`` greater than the data-bearing members: ``writeConcernError`` 100
  UnsatisfiableWriteConcern at once.
- fewer reachable data-bearing members than ``w`` (or the majority): the primary waits; with
  ``wtimeout`` it gives up with ``writeConcernError`` 64 WriteConcernFailed and
  ``errInfo.wtimeout``. So a test can make ``w: "majority"`` fail by stopping members.
- a standalone refuses ``w > 1`` (BadValue), as mongod does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncmongo.testing.member import MemberConfig


def required_acknowledgements(write_concern: Any, members: Sequence[MemberConfig]) -> int:
    """How many data-bearing members must have the write (1: the primary alone)."""
    if not isinstance(write_concern, Mapping):
        return 1
    w = write_concern.get("w", 1)
    data_bearing = sum(1 for m in members if not m.arbiter)
    if w == "majority":
        # MongoDB's "calculated majority": a majority of the voting members, but never more
        # than the data-bearing ones (arbiters vote, never acknowledge).
        return min(len(members) // 2 + 1, data_bearing)
    if isinstance(w, bool) or not isinstance(w, int | float):
        return 1  # tag sets are treated as satisfied by the primary
    return max(int(w), 0)


def unsatisfiable(required: int, members: Sequence[MemberConfig]) -> dict[str, Any] | None:
    """The writeConcernError when ``required`` exceeds the set's data-bearing members."""
    if required <= sum(1 for m in members if not m.arbiter):
        return None
    return {"code": 100, "codeName": "UnsatisfiableWriteConcern",
            "errmsg": "Not enough data-bearing nodes"}


def timed_out(write_concern: Mapping[str, Any]) -> dict[str, Any]:
    """The writeConcernError of a write whose acknowledgements did not come within wtimeout."""
    return {"code": 64, "codeName": "WriteConcernFailed",
            "errmsg": "waiting for replication timed out",
            "errInfo": {"wtimeout": True, "writeConcern": dict(write_concern)}}


def wtimeout_ms(write_concern: Any) -> float | None:
    """``wtimeout`` in milliseconds, None (wait for ever) when absent or 0."""
    if not isinstance(write_concern, Mapping):
        return None
    value = write_concern.get("wtimeout")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def standalone_refusal(write_concern: Any) -> dict[str, Any] | None:
    """mongod's BadValue for ``w > 1`` without a replica set."""
    if not isinstance(write_concern, Mapping):
        return None
    w = write_concern.get("w", 1)
    if isinstance(w, int) and not isinstance(w, bool) and w > 1:
        return {"ok": 0.0, "code": 2, "codeName": "BadValue",
                "errmsg": "cannot use 'w' > 1 on a host that is not a member of a replica set"}
    return None
