"""The pure session core: server session pool, cluster time, transaction table, decoration,
retryability predicates."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.sessions import (
    ServerSession,
    ServerSessionPool,
    TxnAction,
    TxnState,
    greater_cluster_time,
    greater_operation_time,
    transition,
)
from asyncmongo.core.sessions.cluster_time import cluster_time_of
from asyncmongo.core.sessions.decorate import (
    PlainSessionFields,
    SessionFields,
    abort_command,
    commit_command,
    decorate,
    snapshot_time_of,
)
from asyncmongo.core.sessions.retryability import (
    is_retryable_read_error,
    is_retryable_write_error,
    label_retryable_write_error,
)
from asyncmongo.core.sessions.server_session import fresh_for, session_timeout_minutes
from asyncmongo.errors import (
    AutoReconnect,
    InvalidOperation,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    PoolClearedError,
    ServerSelectionTimeoutError,
    WriteConcernError,
)

SETTINGS = TopologySettings(seeds=(("localhost", 27017),))


def _deployment(
    minutes: int | None, kind: TopologyType = TopologyType.REPLICA_SET_WITH_PRIMARY
) -> TopologyDescription:
    """A topology description with this logicalSessionTimeoutMinutes."""
    return TopologyDescription(kind, {}, SETTINGS, logical_session_timeout_minutes=minutes)


#: A deployment with a 30 minute session timeout, and one with none (nothing expires).
THIRTY = _deployment(30)
NO_TIMEOUT = _deployment(None)


def _pool() -> ServerSessionPool:
    counter = itertools.count()
    return ServerSessionPool(lambda: next(counter).to_bytes(16, "big"))


# -- server session pool -----------------------------------------------------------------------


def test_pool_is_lifo() -> None:
    pool = _pool()
    a = pool.acquire(0.0, THIRTY)
    b = pool.acquire(0.0, THIRTY)
    assert a.session_id != b.session_id
    pool.release(a, 1.0, THIRTY)
    pool.release(b, 2.0, THIRTY)
    assert pool.acquire(3.0, THIRTY) is b
    assert pool.acquire(3.0, THIRTY) is a


def test_pool_discards_sessions_about_to_expire() -> None:
    pool = _pool()
    old = pool.acquire(0.0, THIRTY)
    pool.release(old, 0.0, THIRTY)
    # 29 minutes and a second later: less than a minute left, not handed out.
    fresh = pool.acquire(29 * 60 + 1.0, THIRTY)
    assert fresh is not old
    assert len(pool) == 0


def test_pool_release_prunes_stale_from_the_back_and_refuses_expiring() -> None:
    pool = _pool()
    stale = pool.acquire(0.0, THIRTY)
    pool.release(stale, 0.0, THIRTY)
    late = pool.acquire(10 * 60.0, THIRTY)
    assert late is stale  # still fresh at 10 minutes
    pool.release(late, 0.0, THIRTY)  # last used at 0
    other = ServerSession(b"x" * 16, 29 * 60.0)
    pool.release(other, 29 * 60 + 30.0, THIRTY)
    assert len(pool) == 1 and pool.acquire(29 * 60 + 30.0, THIRTY) is other
    expiring = ServerSession(b"y" * 16, 0.0)
    pool.release(expiring, 29 * 60 + 30.0, THIRTY)
    assert len(pool) == 0


def test_pool_never_takes_back_a_dirty_session() -> None:
    pool = _pool()
    session = pool.acquire(0.0, THIRTY)
    session.mark_dirty()
    pool.release(session, 1.0, THIRTY)
    assert len(pool) == 0


def test_pool_without_timeout_keeps_sessions_forever() -> None:
    pool = _pool()
    session = pool.acquire(0.0, NO_TIMEOUT)
    pool.release(session, 1e9, NO_TIMEOUT)
    assert pool.acquire(2e9, NO_TIMEOUT) is session


def test_drain_returns_lsids_and_repr() -> None:
    pool = _pool()
    sessions = [pool.acquire(0.0, THIRTY) for _ in range(3)]
    for session in sessions:
        pool.release(session, 0.0, THIRTY)
    assert repr(pool) == "<ServerSessionPool 3 idle, gen 0>"
    ids = pool.drain()
    assert [i["id"] for i in ids] == [s.lsid["id"] for s in reversed(sessions)]
    assert len(pool) == 0


def test_txn_number_increments_and_lsid_is_a_uuid_binary() -> None:
    session = ServerSession(b"\x01" * 16, 0.0)
    assert session.lsid["id"].subtype == 4
    assert [session.next_txn_number() for _ in range(3)] == [1, 2, 3]


# -- cluster time ------------------------------------------------------------------------------


def _ct(time: int, inc: int = 0) -> dict[str, object]:
    return {"clusterTime": Timestamp(time, inc), "signature": {"keyId": time}}


def test_greater_cluster_time_keeps_the_max() -> None:
    assert greater_cluster_time(None, _ct(1)) == _ct(1)
    assert greater_cluster_time(_ct(2), _ct(1)) == _ct(2)
    assert greater_cluster_time(_ct(2), _ct(2, 1)) == _ct(2, 1)
    assert greater_cluster_time(_ct(2), None) == _ct(2)
    assert greater_cluster_time(_ct(2), {"clusterTime": 5}) == _ct(2)


def test_operation_time_and_reply_parsing() -> None:
    assert greater_operation_time(None, Timestamp(1, 1)) == Timestamp(1, 1)
    assert greater_operation_time(Timestamp(2, 0), Timestamp(1, 1)) == Timestamp(2, 0)
    assert greater_operation_time(Timestamp(2, 0), "nope") == Timestamp(2, 0)
    assert cluster_time_of({"$clusterTime": _ct(3)}) == _ct(3)
    assert cluster_time_of({"$clusterTime": {"x": 1}}) is None


# -- transaction state machine -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "action", "expected", "send"),
    [
        (TxnState.NONE, TxnAction.START, TxnState.STARTING, False),
        (TxnState.STARTING, TxnAction.OPERATE, TxnState.IN_PROGRESS, True),
        (TxnState.STARTING, TxnAction.COMMIT, TxnState.COMMITTED_EMPTY, False),
        (TxnState.STARTING, TxnAction.ABORT, TxnState.ABORTED, False),
        (TxnState.IN_PROGRESS, TxnAction.COMMIT, TxnState.COMMITTED, True),
        (TxnState.IN_PROGRESS, TxnAction.ABORT, TxnState.ABORTED, True),
        (TxnState.COMMITTED, TxnAction.COMMIT, TxnState.COMMITTED, True),
        (TxnState.COMMITTED_EMPTY, TxnAction.COMMIT, TxnState.COMMITTED_EMPTY, False),
        (TxnState.COMMITTED, TxnAction.OPERATE, TxnState.NONE, True),
        (TxnState.ABORTED, TxnAction.START, TxnState.STARTING, False),
    ],
)
def test_allowed_transitions(
    state: TxnState, action: TxnAction, expected: TxnState, send: bool
) -> None:
    step = transition(state, action)
    assert (step.state, step.send) == (expected, send)


@pytest.mark.parametrize(
    ("state", "action", "message"),
    [
        (TxnState.NONE, TxnAction.COMMIT, "No transaction started"),
        (TxnState.NONE, TxnAction.ABORT, "No transaction started"),
        (TxnState.IN_PROGRESS, TxnAction.START, "Transaction already in progress"),
        (TxnState.ABORTED, TxnAction.ABORT, "Cannot call abortTransaction twice"),
        (TxnState.ABORTED, TxnAction.COMMIT, "after calling abortTransaction"),
        (TxnState.COMMITTED, TxnAction.ABORT, "after calling commitTransaction"),
        (TxnState.COMMITTED_EMPTY, TxnAction.ABORT, "after calling commitTransaction"),
    ],
)
def test_refused_transitions(state: TxnState, action: TxnAction, message: str) -> None:
    with pytest.raises(InvalidOperation, match=message):
        transition(state, action)


def test_every_pair_is_in_the_table() -> None:
    for state in TxnState:
        for action in TxnAction:
            try:
                transition(state, action)
            except InvalidOperation:
                pass
    assert TxnState.COMMITTED_EMPTY.public_name == "committed"


# -- decoration --------------------------------------------------------------------------------

LSID = {"id": b"1"}


def test_plain_session_and_retryable_write() -> None:
    command = {"insert": "c", "writeConcern": {"w": 1}}
    out = decorate(command, SessionFields(lsid=LSID, txn_number=4, cluster_time=_ct(1)))
    assert out == {**command, "lsid": LSID, "txnNumber": 4, "$clusterTime": _ct(1)}
    assert "lsid" not in command  # never mutates the input


def test_first_command_of_a_transaction() -> None:
    fields = SessionFields(
        lsid=LSID,
        txn_number=2,
        in_transaction=True,
        starting_transaction=True,
        transaction_read_concern={"level": "snapshot"},
        after_cluster_time=Timestamp(5, 1),
    )
    out = decorate({"find": "c", "readConcern": {"level": "local"}, "writeConcern": {}}, fields)
    assert out == {
        "find": "c",
        "lsid": LSID,
        "txnNumber": 2,
        "startTransaction": True,
        "readConcern": {"level": "snapshot", "afterClusterTime": Timestamp(5, 1)},
        "autocommit": False,
    }


def test_later_command_of_a_transaction_has_no_concerns() -> None:
    fields = SessionFields(lsid=LSID, txn_number=2, in_transaction=True)
    out = decorate({"insert": "c", "writeConcern": {"w": 1}, "readConcern": {}}, fields)
    assert out == {"insert": "c", "lsid": LSID, "txnNumber": 2, "autocommit": False}
    commit = decorate({"commitTransaction": 1, "writeConcern": {"w": 1}}, fields)
    assert commit["writeConcern"] == {"w": 1}


def test_causal_and_snapshot_reads() -> None:
    causal = SessionFields(lsid=LSID, after_cluster_time=Timestamp(3, 0))
    out = decorate({"find": "c", "readConcern": {"level": "majority"}}, causal)
    assert out["readConcern"] == {"level": "majority", "afterClusterTime": Timestamp(3, 0)}
    assert decorate({"insert": "c"}, causal)["readConcern"] == {"afterClusterTime": Timestamp(3, 0)}
    assert "readConcern" not in decorate({"ping": 1}, causal)
    snap = SessionFields(lsid=LSID, snapshot=True)
    assert decorate({"find": "c"}, snap)["readConcern"] == {"level": "snapshot"}
    snap = SessionFields(lsid=LSID, snapshot=True, snapshot_time=Timestamp(9, 9))
    assert decorate({"distinct": "c"}, snap)["readConcern"] == {
        "level": "snapshot",
        "atClusterTime": Timestamp(9, 9),
    }
    assert "readConcern" not in decorate({"find": "c"}, SessionFields(lsid=LSID))


def test_commit_and_abort_commands() -> None:
    assert commit_command(None, None, None, retry=False) == {"commitTransaction": 1}
    assert commit_command({"w": 2, "j": True}, 50, {"t": 1}, retry=True) == {
        "commitTransaction": 1,
        "writeConcern": {"w": "majority", "j": True, "wtimeout": 10_000},
        "maxTimeMS": 50,
        "recoveryToken": {"t": 1},
    }
    assert abort_command({"w": 1}, None) == {"abortTransaction": 1, "writeConcern": {"w": 1}}
    assert snapshot_time_of({"cursor": {"atClusterTime": Timestamp(1, 2)}}) == Timestamp(1, 2)
    assert snapshot_time_of({"atClusterTime": Timestamp(1, 3)}) == Timestamp(1, 3)
    assert snapshot_time_of({}) is None


# -- retryability ------------------------------------------------------------------------------


def test_network_errors_are_labelled_retryable() -> None:
    exc = AutoReconnect("reset")
    label_retryable_write_error(exc, 17)
    assert is_retryable_write_error(exc)
    timeout = NetworkTimeout("slow")
    label_retryable_write_error(timeout, 17)
    assert is_retryable_write_error(timeout)
    selection = ServerSelectionTimeoutError("none")
    label_retryable_write_error(selection, 17)
    assert not is_retryable_write_error(selection)
    assert is_retryable_write_error(PoolClearedError("cleared"))


def test_codes_are_labelled_only_for_old_servers() -> None:
    old = OperationFailure("x", 91, {"code": 91})
    label_retryable_write_error(old, 8)
    assert is_retryable_write_error(old)
    new = OperationFailure("x", 91, {"code": 91})
    label_retryable_write_error(new, 9)
    assert not is_retryable_write_error(new)
    concern = WriteConcernError("x", 64, {"writeConcernError": {"code": 11600}})
    label_retryable_write_error(concern, 7)
    assert is_retryable_write_error(concern)
    server = OperationFailure("x", 2, {"code": 2, "errorLabels": ["RetryableWriteError"]})
    assert is_retryable_write_error(server)


def test_retryable_read_errors() -> None:
    assert is_retryable_read_error(AutoReconnect("x"))
    assert is_retryable_read_error(NotPrimaryError("not primary", {"code": 10107}))
    assert is_retryable_read_error(OperationFailure("x", 6, {}))
    assert not is_retryable_read_error(OperationFailure("x", 2, {}))
    assert not is_retryable_read_error(ServerSelectionTimeoutError("x"))
    assert is_retryable_read_error(PoolClearedError("x"))


_PLAIN_COMMANDS: list[dict[str, Any]] = [
    {"find": "c", "filter": {}},
    {"find": "c", "readConcern": {"level": "majority"}},
    {"find": "c", "readConcern": {}},
    {"aggregate": "c", "pipeline": [], "readConcern": {"level": "local"}},
    {"insert": "c", "writeConcern": {"w": 1}},
    {"insert": "c", "readConcern": {"level": "local"}},
    {"getMore": 5, "collection": "c"},
    {"ping": 1},
    {"readConcern": {"level": "local"}, "find": "c"},
]


@pytest.mark.parametrize("command", _PLAIN_COMMANDS)
@pytest.mark.parametrize("txn_number", [None, 7])
@pytest.mark.parametrize("cluster_time", [None, _ct(3)])
@pytest.mark.parametrize("lsid", [None, LSID])
def test_plain_fields_decorate_as_the_general_fields_do(
    command: dict[str, Any],
    txn_number: int | None,
    cluster_time: dict[str, object] | None,
    lsid: dict[str, Any] | None,
) -> None:
    """PlainSessionFields (an implicit session's) take decorate's short path: the same
    document, in the same key order, as the equivalent SessionFields."""
    plain = PlainSessionFields(lsid, txn_number, cluster_time)
    general = SessionFields(lsid=lsid, txn_number=txn_number, cluster_time=cluster_time)
    assert plain == general and general == plain
    assert repr(plain) == repr(general)
    out, expected = decorate(command, plain), decorate(command, general)
    assert out == expected and list(out) == list(expected)
    if "readConcern" in command:  # copied (or not) alike
        shared = out["readConcern"] is command["readConcern"]
        assert shared == (expected["readConcern"] is command["readConcern"])


def test_plain_fields_are_outside_any_transaction_snapshot_or_causal_read() -> None:
    plain = PlainSessionFields(LSID, 1, None)
    assert plain.plain and not SessionFields().plain
    assert (plain.in_transaction, plain.starting_transaction, plain.snapshot) == (
        False,
        False,
        False,
    )
    assert plain.after_cluster_time is plain.snapshot_time is plain.transaction_read_concern
    assert plain.after_cluster_time is None


def test_fresh_for_is_the_timeout_less_the_margin() -> None:
    assert fresh_for(None) == math.inf  # nothing expires
    assert fresh_for(30) == 29 * 60.0
    pool = _pool()
    session = pool.acquire(0.0, THIRTY)
    pool.release(session, 29 * 60.0, THIRTY)
    assert pool.acquire(29 * 60.0, THIRTY) is session  # exactly at the edge
    pool.release(session, 29 * 60.0 + 1, THIRTY)
    assert len(pool) == 0  # about to expire: not taken back


def test_the_pool_reads_the_timeout_of_each_new_description() -> None:
    """The timeout is derived once per description object (compared by identity), so an
    equal but new description, or one with another timeout, is read again; load-balanced
    mode has none whatever the description says (sessions spec)."""
    assert session_timeout_minutes(THIRTY) == 30
    assert session_timeout_minutes(_deployment(None)) is None
    assert session_timeout_minutes(_deployment(1, TopologyType.LOAD_BALANCED)) is None
    pool = _pool()
    session = pool.acquire(0.0, THIRTY)
    pool.release(session, 0.0, THIRTY)
    assert pool.acquire(10 * 60.0, _deployment(10)) is not session  # 9 minutes fresh at most
    kept = pool.acquire(0.0, _deployment(1, TopologyType.LOAD_BALANCED))
    pool.release(kept, 1e9, _deployment(1, TopologyType.LOAD_BALANCED))
    assert pool.acquire(2e9, _deployment(1, TopologyType.LOAD_BALANCED)) is kept
    pool.release(kept, 2e9, _deployment(1))  # a new description: read, kept has expired
    assert len(pool) == 0
