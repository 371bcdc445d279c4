"""The client's server session pool reads logicalSessionTimeoutMinutes once per topology
description (it is needed on every acquire and release) and follows every new description:
the running topology's, read as an attribute once the client has one, the client's own
description before that."""

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


class _Topology:
    """The running topology as the pool sees it: a ``description`` that changes."""

    def __init__(self, description: TopologyDescription) -> None:
        self.reads = 0
        self._description = description

    @property
    def description(self) -> TopologyDescription:
        self.reads += 1
        return self._description

    def replace(self, description: TopologyDescription) -> None:
        self._description = description


def test_the_timeout_follows_the_topologys_description(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(pool_module, "monotonic", lambda: now[0])
    topology = _Topology(_description(TopologyType.REPLICA_SET_WITH_PRIMARY, 30))
    asked: list[int] = []

    def client_description() -> TopologyDescription:
        asked.append(1)
        return topology.description  # a connected client's answer (never asked here)

    sessions = ServerSessions(client_description, lambda: topology)
    session = sessions.acquire(0.0)
    now[0] = 29 * 60.0 + 1  # less than a minute left of 30
    sessions.release(session)
    # the running topology is read from the start, the client is not asked
    assert len(sessions) == 0 and not asked
    reads = topology.reads

    # a new description object with a longer timeout: read again, the session is kept
    topology.replace(dataclasses.replace(topology.description, logical_session_timeout_minutes=60))
    session = sessions.acquire(0.0)
    sessions.release(session)
    assert len(sessions) == 1
    assert sessions.acquire(now[0]) is session
    assert topology.reads > reads

    # load-balanced mode: nothing expires, whatever the description says
    topology.replace(_description(TopologyType.LOAD_BALANCED, 1))
    now[0] = 1e9
    sessions.release(session)
    assert sessions.acquire() is session

    # an equal but new description object is read again (cached by identity)
    topology.replace(_description(TopologyType.REPLICA_SET_WITH_PRIMARY, None))
    sessions.release(session)
    topology.replace(_description(TopologyType.REPLICA_SET_WITH_PRIMARY, 1))
    assert sessions.acquire(1e9 + 61) is not session  # expired under the new timeout
    assert not asked


def test_before_the_client_connects_its_description_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No topology yet: the client's description on every acquire and release (a new object
    each time, as ``topology_description`` makes it), then the topology once there is one."""
    now = [0.0]
    monkeypatch.setattr(pool_module, "monotonic", lambda: now[0])
    asked: list[int] = []

    def client_description() -> TopologyDescription:
        asked.append(1)
        return _description(TopologyType.REPLICA_SET_WITH_PRIMARY, 30)

    running: list[_Topology] = []
    sessions = ServerSessions(client_description, lambda: running[0] if running else None)
    session = sessions.acquire(0.0)
    now[0] = 29 * 60.0 + 1  # less than a minute left of 30
    sessions.release(session)
    assert len(sessions) == 0 and asked  # the client's timeout applied

    # connected: the topology's description from now on (no timeout: nothing expires)
    running.append(_Topology(_description(TopologyType.REPLICA_SET_WITH_PRIMARY, None)))
    session = sessions.acquire(0.0)
    sessions.release(session)
    asked.clear()
    now[0] = 1e9
    assert sessions.acquire() is session
    sessions.release(session)
    assert not asked and len(sessions) == 1


def test_without_a_topology_source_the_description_is_all_there_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ServerSessions(description)`` alone (tools and tests): the description decides."""
    monkeypatch.setattr(pool_module, "monotonic", lambda: 29 * 60.0 + 1)
    sessions = ServerSessions(lambda: _description(TopologyType.REPLICA_SET_WITH_PRIMARY, 30))
    sessions.release(sessions.acquire(0.0))
    assert len(sessions) == 0
