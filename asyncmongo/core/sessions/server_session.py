"""Server sessions and the server session pool (sessions spec, "Server Session Pool").

A server session is the server-side half of a ClientSession: its ``lsid`` (a random UUID the
caller supplies), the transaction number of its latest retryable write or transaction, when
it was last used and whether a network error made it "dirty". The pool is LIFO: the most
recently used session is handed out first, so few distinct sessions are kept alive on the
server. A session within a minute of ``logicalSessionTimeoutMinutes`` is about to expire and
is discarded instead of reused; a dirty one is never returned to the pool (the server may
still hold it in an unknown state).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.bson.binary import Binary
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType

__all__ = [
    "ServerSession",
    "ServerSessionPool",
    "fresh_for",
    "is_about_to_expire",
    "session_timeout_minutes",
]

#: Sessions spec: a session with less than a minute left is not worth reusing.
EXPIRY_MARGIN_S = 60.0


@dataclass(slots=True)
class ServerSession:
    """One server session: mutable bookkeeping owned by whoever checked it out."""

    session_id: bytes
    last_use: float
    txn_number: int = 0
    dirty: bool = False
    #: Sessions spec: the lsid document ``{"id": UUID}`` (binary subtype 4).
    lsid: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.lsid = {"id": Binary(self.session_id, 4)}

    def next_txn_number(self) -> int:
        """Increment and return the transaction number (retryable writes, transactions)."""
        self.txn_number += 1
        return self.txn_number

    def mark_dirty(self) -> None:
        """A network error happened while using it: it must not be pooled again."""
        self.dirty = True


def is_about_to_expire(session: ServerSession, now: float, timeout_minutes: int | None) -> bool:
    """Sessions spec: expires within a minute (``None`` timeout: the server reports none,
    e.g. load-balanced mode, so it never counts as expiring)."""
    if timeout_minutes is None:
        return False
    return session.last_use + timeout_minutes * 60.0 - EXPIRY_MARGIN_S < now


def fresh_for(timeout_minutes: int | None) -> float:
    """How long (seconds) after its last use a session is still worth reusing: the timeout
    less the one-minute margin (``is_about_to_expire``); ``math.inf`` when there is no
    timeout (nothing expires), so the pool's expiry test needs no None check."""
    if timeout_minutes is None:
        return math.inf
    return timeout_minutes * 60.0 - EXPIRY_MARGIN_S


def session_timeout_minutes(description: TopologyDescription) -> int | None:
    """The deployment's logicalSessionTimeoutMinutes as the pool applies it: none in
    load-balanced mode (sessions spec: nothing expires behind a load balancer)."""
    if description.topology_type is TopologyType.LOAD_BALANCED:
        return None
    minutes = description.logical_session_timeout_minutes
    return minutes if isinstance(minutes, int) else None


class ServerSessionPool:
    """LIFO pool of server sessions; every method is a plain synchronous decision.

    ``acquire`` and ``release`` take the deployment's topology description: its session
    timeout only changes with the description, so the pool derives ``fresh_for`` of it
    once per description object (compared by identity) rather than on every operation.
    """

    __slots__ = ("_described", "_fresh", "_idle", "_new_id", "generation")

    def __init__(self, new_id: Callable[[], bytes]) -> None:
        self._idle: deque[ServerSession] = deque()
        self._new_id = new_id
        #: Bumped by ``reset``: sessions of an older generation are not taken back.
        self.generation = 0
        #: The description ``_fresh`` was derived from, and ``fresh_for`` of its timeout.
        self._described: TopologyDescription | None = None
        self._fresh = math.inf

    def __repr__(self) -> str:
        return f"<ServerSessionPool {len(self._idle)} idle, gen {self.generation}>"

    def __len__(self) -> int:
        return len(self._idle)

    def acquire(self, now: float, description: TopologyDescription) -> ServerSession:
        """The most recently used session still fresh, else a new one (sessions spec:
        "Algorithm to acquire a ServerSession instance from the server session pool").
        The expiry test is ``is_about_to_expire`` inlined: this runs on every operation."""
        if description is not self._described:
            self._describe(description)
        idle = self._idle
        while idle:
            session = idle.popleft()
            if not session.last_use + self._fresh < now:
                return session
        return ServerSession(self._new_id(), now)

    def release(self, session: ServerSession, now: float, description: TopologyDescription) -> None:
        """Take a session back (sessions spec: "Algorithm to return a ServerSession instance
        to the server session pool"): first drop stale sessions from the old end, then keep
        this one at the front unless it is dirty or about to expire."""
        if description is not self._described:
            self._describe(description)
        idle = self._idle
        while idle and idle[-1].last_use + self._fresh < now:
            idle.pop()
        if not (session.dirty or session.last_use + self._fresh < now):
            idle.appendleft(session)

    def drain(self) -> list[dict[str, Any]]:
        """Empty the pool and return the lsids to end (``endSessions`` on client close)."""
        ids = [session.lsid for session in self._idle]
        self._idle.clear()
        return ids

    def reset(self) -> None:
        """Forget every idle session (a fork or a new deployment)."""
        self._idle.clear()
        self.generation += 1

    def _describe(self, description: TopologyDescription) -> None:
        """Remember the session timeout of a new description (see the class docstring)."""
        self._fresh = fresh_for(session_timeout_minutes(description))
        self._described = description
