"""The client's server session pool reads logicalSessionTimeoutMinutes once per topology
description (it is asked on every acquire and release) and follows every new description."""

from __future__ import annotations

import dataclasses

import pytest

from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.sessions import pool as pool_module
from asyncmongo.sessions.pool import ServerSessions

SETTINGS = TopologySettings(seeds=(("localhost", 27017),))


def _description(kind: TopologyType, minutes: int | None) -> TopologyDescription:
    return TopologyDescription(kind, {}, SETTINGS, logical_session_timeout_minutes=minutes)


def test_the_timeout_follows_the_current_description(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(pool_module, "monotonic", lambda: now[0])
    current = [_description(TopologyType.REPLICA_SET_WITH_PRIMARY, 30)]
    asked: list[int] = []

    def description() -> TopologyDescription:
        asked.append(1)
        return current[0]

    sessions = ServerSessions(description)
    session = sessions.acquire(0.0)
    now[0] = 29 * 60.0 + 1  # less than a minute left of 30
    sessions.release(session)
    assert len(sessions) == 0 and len(asked) == 2  # asked on acquire and on release

    # a new description object with a longer timeout: read again, the session is kept
    current[0] = dataclasses.replace(current[0], logical_session_timeout_minutes=60)
    session = sessions.acquire(0.0)
    sessions.release(session)
    assert len(sessions) == 1
    assert sessions.acquire(now[0]) is session

    # load-balanced mode: nothing expires, whatever the description says
    current[0] = _description(TopologyType.LOAD_BALANCED, 1)
    now[0] = 1e9
    sessions.release(session)
    assert sessions.acquire() is session

    # an equal but new description object is read again (cached by identity)
    current[0] = _description(TopologyType.REPLICA_SET_WITH_PRIMARY, None)
    sessions.release(session)
    current[0] = _description(TopologyType.REPLICA_SET_WITH_PRIMARY, 1)
    assert sessions.acquire(1e9 + 61) is not session  # expired under the new timeout
