"""The state a replica set's members share: configuration, primary, term, last write.

Plain bookkeeping, no asyncio: the deployment changes it (elections, reconfig) and then bumps
the members' topology versions; each member reads :meth:`ReplicaSetGroup.view` and
:meth:`ReplicaSetGroup.last_write_for` when it builds a hello reply. Elections follow mongod: a
new term (so a new ``electionId``) and an unchanged ``setVersion``; a reconfig bumps
``setVersion``.
"""

from __future__ import annotations

import datetime
from collections.abc import Container, Iterable

from asyncmongo.bson import Timestamp
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.member import LastWrite, MemberConfig, ReplicaSetView


class ReplicaSetGroup:
    """The configuration and election state of one replica set."""

    __slots__ = ("_frozen_until", "_increment", "_last_op_time", "members", "primary",
                 "replication_lag_ms", "set_name", "set_version", "term")

    def __init__(self, set_name: str, members: Iterable[MemberConfig], *,
                 replication_lag_ms: float = 0) -> None:
        self.set_name = set_name
        self.members = tuple(members)
        self.set_version = 1
        self.term = 0
        self.primary: str | None = None
        self.replication_lag_ms = replication_lag_ms
        self._last_op_time = Timestamp(0, 0)
        self._increment = 0
        self._frozen_until: dict[str, float] = {}

    def __repr__(self) -> str:
        return (f"<ReplicaSetGroup {self.set_name} v{self.set_version} term {self.term} "
                f"primary {self.primary} {len(self.members)} members>")

    def view(self) -> ReplicaSetView:
        return ReplicaSetView(self.set_name, self.set_version, self.members, self.primary,
                              self.term)

    def elect(self, host: str) -> None:
        """``host`` wins an election: a new term, the same setVersion."""
        config = self._config(host)
        if config.arbiter or config.hidden or config.priority <= 0:
            raise ConfigurationError(f"{host} cannot become primary (arbiter, hidden or "
                                     "priority 0)")
        self.term += 1
        self.primary = host

    def step_down(self) -> str | None:
        """The primary steps down; returns the host that was primary."""
        old, self.primary = self.primary, None
        return old

    def freeze(self, host: str, seconds: float, now: float) -> None:
        """``replSetFreeze``: ``host`` stands for no election until ``now + seconds`` (times
        on the caller's monotonic clock); 0 unfreezes it at once, as on mongod."""
        self._config(host)
        if seconds <= 0:
            self._frozen_until.pop(host, None)
        else:
            self._frozen_until[host] = max(self._frozen_until.get(host, now), now + seconds)

    def frozen(self, now: float) -> set[str]:
        """The members frozen (by ``replSetFreeze``) at ``now``: not electable."""
        return {host for host, until in self._frozen_until.items() if until > now}

    def reconfig(self, add: Iterable[MemberConfig] = (), remove: Iterable[str] = ()) -> None:
        """Add and remove members: setVersion + 1."""
        gone = set(remove)
        if self.primary in gone:
            raise ConfigurationError("the primary cannot be removed; step it down first")
        kept = [m for m in self.members if m.host not in gone]
        self.members = (*kept, *add)
        self.set_version += 1

    def next_electable(self, exclude: Container[str | None] = ()) -> str | None:
        """The first electable member not in ``exclude`` (by priority, then order)."""
        candidates = [m for m in self.members if m.electable and m.host not in exclude]
        candidates.sort(key=lambda m: -m.priority)
        return candidates[0].host if candidates else None

    def record_write(self, now: datetime.datetime) -> Timestamp:
        """A write on the primary: the next optime (seconds, increment)."""
        seconds = int(now.timestamp())
        if seconds > self._last_op_time.time:
            self._increment = 0
        self._increment += 1
        self._last_op_time = Timestamp(max(seconds, self._last_op_time.time), self._increment)
        return self._last_op_time

    def cluster_time(self, now: datetime.datetime) -> Timestamp:
        """The newest optime, or now when nothing was written yet."""
        if self._last_op_time.time == 0:
            return Timestamp(int(now.timestamp()), 1)
        return self._last_op_time

    def last_write_for(self, host: str, now: datetime.datetime) -> LastWrite:
        """A member's ``lastWrite``: the primary's periodic no-op writes keep its date at
        ``now``; a secondary lags ``replication_lag_ms`` behind (what max staleness sees)."""
        lag = 0.0 if host == self.primary else self.replication_lag_ms
        date = now - datetime.timedelta(milliseconds=lag)
        date = date.replace(microsecond=date.microsecond // 1000 * 1000)
        op_time = self.cluster_time(date)
        return LastWrite(op_time, date, max(self.term, 1))

    def _config(self, host: str) -> MemberConfig:
        for member in self.members:
            if member.host == host:
                return member
        raise ConfigurationError(f"{host} is not a member of {self.set_name}")
