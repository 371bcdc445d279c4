"""A network partition between the members of a simulated replica set.

The simulated members share one store and never talk to each other, so a partition between
them is modelled by its outcome, as a real set reaches it: the side holding a majority of the
voting members keeps (or elects) the primary, and a primary cut off on the minority side steps
down. The driver still reaches every member, so it sees the new primary, and the old one as
a secondary, through its monitors. :meth:`asyncmongo.testing.ReplicaSet.partition_members`
returns a :class:`MemberPartition`; healing it reconnects the sides (roles stay: the new
primary keeps the set, as after a real partition heals).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.server import SimServer

__all__ = ["MemberPartition", "ReplicaSetControl"]


class ReplicaSetControl(Protocol):
    """What a partition needs of a replica set (:class:`~asyncmongo.testing.ReplicaSet`)."""

    @property
    def set_name(self) -> str: ...

    @property
    def members(self) -> Sequence[SimServer]: ...

    @property
    def group(self) -> ReplicaSetGroup: ...

    @property
    def primary(self) -> SimServer | None: ...

    def member(self, host: str) -> SimServer: ...

    async def elect(self, member: SimServer) -> None: ...

    async def step_down(self, *, elect: SimServer | bool = True) -> SimServer | None: ...


class MemberPartition:
    """``isolated`` members cut off from the rest of the set; ``async with`` it, or
    ``await partition.heal()``."""

    __slots__ = ("active", "isolated", "majority", "replica_set")

    def __init__(self, replica_set: ReplicaSetControl, isolated: Iterable[SimServer]) -> None:
        self.replica_set = replica_set
        self.isolated = frozenset(member.host for member in isolated)
        unknown = self.isolated - {member.host for member in replica_set.members}
        if unknown:
            raise ConfigurationError(f"not members of {replica_set.set_name}: {sorted(unknown)}")
        voters = len(replica_set.members)
        rest = voters - len(self.isolated)
        #: The side with a majority of the voters: "rest", "isolated" or None (no side has
        #: one: no primary until the partition heals).
        self.majority = ("rest" if rest * 2 > voters
                         else "isolated" if len(self.isolated) * 2 > voters else None)
        self.active = True

    def __repr__(self) -> str:
        state = "active" if self.active else "healed"
        return (f"<MemberPartition {sorted(self.isolated)} | rest, majority {self.majority}, "
                f"{state}>")

    def cut_off(self) -> set[str]:
        """The hosts that cannot see a majority while the partition lasts (no election can
        make one of them primary)."""
        if not self.active:
            return set()
        everyone = {member.host for member in self.replica_set.members}
        if self.majority == "rest":
            return set(self.isolated)
        if self.majority == "isolated":
            return everyone - self.isolated
        return everyone

    def side_of(self, member: SimServer) -> str:
        return "isolated" if member.host in self.isolated else "rest"

    async def apply(self) -> SimServer | None:
        """Step a minority primary down and elect on the majority side; returns the primary
        after the partition (None when no side has a majority)."""
        rs = self.replica_set
        primary = rs.primary
        if primary is not None and self.side_of(primary) == self.majority:
            return primary
        if self.majority is None:
            await rs.step_down(elect=False)
            return None
        candidates = [m for m in rs.members
                      if self.side_of(m) == self.majority and m is not primary]
        electable = {m.host for m in candidates}
        winner_host = rs.group.next_electable(
            {m.host for m in rs.members if m.host not in electable})
        winner = rs.member(winner_host) if winner_host is not None else False
        return await rs.step_down(elect=winner)

    async def heal(self) -> None:
        """The sides see each other again; a set left without a primary elects one."""
        if not self.active:
            return
        self.active = False
        rs = self.replica_set
        if rs.primary is None:
            host = rs.group.next_electable()
            if host is not None:
                await rs.elect(rs.member(host))

    async def __aenter__(self) -> MemberPartition:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.heal()
