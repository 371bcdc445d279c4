"""ImplicitSession and the client's server session pool, without a server: what an operation
run without ``session=`` does with its server session (sessions spec, "Implicit sessions").

The server session is taken when the command is built (after checkout), stamped with the
clock reading of each attempt, given back once after the operation, never pooled twice and
never pooled dirty; a retryable write takes it earlier for its txnNumber, without stamping.
"""

from __future__ import annotations

import pytest

from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.errors import AutoReconnect, ServerSelectionTimeoutError
from asyncmongo.sessions import implicit as implicit_module
from asyncmongo.sessions.implicit import ImplicitSession
from asyncmongo.sessions.pool import ServerSessions

SETTINGS = TopologySettings(seeds=(("localhost", 27017),))


class _Topology:
    def __init__(self, kind: TopologyType, minutes: int | None) -> None:
        self.description = TopologyDescription(
            kind, {}, SETTINGS, logical_session_timeout_minutes=minutes
        )


def _client_description() -> TopologyDescription:
    raise AssertionError("connected: the topology is read, not the client")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr(implicit_module, "monotonic", lambda: now[0])
    return now


def _sessions(kind: TopologyType = TopologyType.REPLICA_SET_WITH_PRIMARY) -> ServerSessions:
    topology = _Topology(kind, 30)
    return ServerSessions(_client_description, lambda: topology)


def test_taken_when_the_command_is_built_stamped_and_given_back_once(clock: list[float]) -> None:
    sessions = _sessions()
    new = ImplicitSession.factory(sessions)
    session = new()
    assert len(sessions) == 0 and session._server_session is None  # nothing taken yet
    fields = session._fields(None, None, {"clusterTime": 1})  # type: ignore[arg-type]
    server_session = session._server_session
    assert server_session is not None and server_session.last_use == 100.0
    assert fields.lsid is server_session.lsid and fields.plain
    assert fields.txn_number is None and fields.cluster_time == {"clusterTime": 1}

    clock[0] = 200.0  # a retry: the same server session, stamped again
    again = session._fields(None, 7, None)  # type: ignore[arg-type]
    assert again.lsid is server_session.lsid and again.txn_number == 7
    assert server_session.last_use == 200.0

    session._release()
    session._release()  # a second release finds nothing: never pooled twice
    assert len(sessions) == 1

    other = new()  # LIFO: the next operation reuses it
    other._fields(None, None, None)  # type: ignore[arg-type]
    assert other._server_session is server_session and len(sessions) == 0


def test_concurrent_operations_never_share_a_server_session(clock: list[float]) -> None:
    sessions = _sessions()
    first, second = ImplicitSession(sessions), ImplicitSession(sessions)
    first._fields(None, None, None)  # type: ignore[arg-type]
    second._fields(None, None, None)  # type: ignore[arg-type]
    assert first._server_session is not second._server_session
    first._release()
    second._release()
    assert len(sessions) == 2


def test_a_retryable_write_takes_it_for_its_txn_number_without_stamping(
    clock: list[float],
) -> None:
    sessions = _sessions()
    used = ImplicitSession(sessions)
    used._fields(None, None, None)  # type: ignore[arg-type]
    used._release()  # pooled, last used at 100

    clock[0] = 160.0
    write = ImplicitSession(sessions)
    assert write._next_txn_number() == 1
    server_session = write._server_session
    assert server_session is not None and server_session.last_use == 100.0  # not used yet
    fields = write._fields(None, 1, None)  # type: ignore[arg-type]
    assert write._server_session is server_session and fields.txn_number == 1
    assert server_session.last_use == 160.0
    write._release()
    assert ImplicitSession(sessions)._next_txn_number() == 2  # the same server session


def test_a_network_error_dirties_it_and_it_is_not_pooled(clock: list[float]) -> None:
    sessions = _sessions()
    selection = ImplicitSession(sessions)
    selection._fields(None, None, None)  # type: ignore[arg-type]
    selection._on_error(ServerSelectionTimeoutError("no server"), None, "find")  # type: ignore[arg-type]
    selection._release()
    assert len(sessions) == 1  # not a network error

    network = ImplicitSession(sessions)
    network._fields(None, None, None)  # type: ignore[arg-type]
    network._on_error(AutoReconnect("connection reset"), None, "find")  # type: ignore[arg-type]
    network._release()
    assert len(sessions) == 0


def test_expiry_follows_the_deployment(clock: list[float]) -> None:
    """About to expire (less than a minute of logicalSessionTimeoutMinutes left): not
    reused; behind a load balancer nothing expires."""
    for kind, reused in (
        (TopologyType.REPLICA_SET_WITH_PRIMARY, False),
        (TopologyType.LOAD_BALANCED, True),
    ):
        sessions = _sessions(kind)
        clock[0] = 0.0
        first = ImplicitSession(sessions)
        first._fields(None, None, None)  # type: ignore[arg-type]
        server_session = first._server_session
        first._release()
        clock[0] = 29 * 60.0 + 1
        later = ImplicitSession(sessions)
        later._fields(None, None, None)  # type: ignore[arg-type]
        assert (later._server_session is server_session) is reused, kind
