"""with_transaction's time budget (convenient transactions API, "Retry Timeout is Enforced").

A fake session and an injected clock: the three prose cases (transient error from the
callback, UnknownTransactionCommitResult and TransientTransactionError from the commit),
the backoff check before a retry, timeoutMS replacing the 120 seconds (ExecutionTimeout
instead of NetworkTimeout), errors that already are timeouts passing through unchanged,
and errors without labels never retried. No test waits for real time.
"""

from __future__ import annotations

from typing import Any

import pytest

import asyncmongo.sessions.with_transaction as wt
from asyncmongo.core.sessions import TxnState
from asyncmongo.errors import (
    ExecutionTimeout,
    MongoError,
    NetworkTimeout,
    OperationFailure,
    WriteConcernError,
)
from asyncmongo.sessions.options import TransactionOptions


class Clock:
    """A monotonic clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeSession:
    """What run_with_transaction uses of a session; commit outcomes are scripted."""

    def __init__(self, commit_errors: list[MongoError] | None = None) -> None:
        self.commit_errors = list(commit_errors or [])
        self._txn_state = TxnState.NONE
        self.started = 0
        self.commits = 0
        self.aborts = 0
        self._session_deadline: float | None = None
        self.abort_deadlines: list[float | None] = []

    @property
    def in_transaction(self) -> bool:
        return self._txn_state.in_transaction

    def start_transaction(self, *args: Any) -> None:
        self.started += 1
        self._txn_state = TxnState.IN_PROGRESS

    async def abort_transaction(self) -> None:
        self.aborts += 1
        self.abort_deadlines.append(self._session_deadline)
        self._txn_state = TxnState.ABORTED

    def _abandon_transaction(self) -> None:
        self._txn_state = TxnState.ABORTED

    async def commit_transaction(self) -> None:
        self.commits += 1
        if self.commit_errors:
            raise self.commit_errors.pop(0)
        self._txn_state = TxnState.COMMITTED


def _labelled(label: str, code: int = 112) -> OperationFailure:
    error = OperationFailure(f"boom {code}", code, {"code": code})
    error._add_error_label(label)
    return error


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)
        clock.now += delay

    monkeypatch.setattr(wt, "monotonic", clock)
    monkeypatch.setattr(wt, "sleep", sleep)
    monkeypatch.setattr(wt, "jitter", lambda: 1.0)
    return clock


async def _run(session: FakeSession, callback: Any, timeout_ms: int | None = None) -> Any:
    return await wt.run_with_transaction(
        session,  # type: ignore[arg-type]
        callback,
        TransactionOptions(),
        timeout_ms,
    )


async def test_transient_callback_error_is_retried_within_the_budget(clock: Clock) -> None:
    session = FakeSession()
    calls = 0

    async def callback(s: Any) -> str:
        nonlocal calls
        calls += 1
        if calls < 4:
            raise _labelled("TransientTransactionError")
        return "done"

    assert await _run(session, callback) == "done"
    assert calls == 4 and session.aborts == 3 and session.commits == 1


async def test_transient_callback_error_after_the_budget_is_a_network_timeout(
    clock: Clock,
) -> None:
    session = FakeSession()
    error = _labelled("TransientTransactionError")

    async def callback(s: Any) -> None:
        clock.now += wt.WITH_TRANSACTION_TIMEOUT_S  # the callback took the whole budget
        raise error

    with pytest.raises(NetworkTimeout) as raised:
        await _run(session, callback)
    assert raised.value.__cause__ is error
    assert raised.value.error_labels == error.error_labels
    assert "boom 112" in str(raised.value)
    assert session.started == 1


async def test_unknown_commit_result_after_the_budget_is_a_network_timeout(
    clock: Clock,
) -> None:
    error = _labelled("UnknownTransactionCommitResult", 91)
    session = FakeSession([error])

    async def callback(s: Any) -> None:
        clock.now += wt.WITH_TRANSACTION_TIMEOUT_S + 1

    with pytest.raises(NetworkTimeout) as raised:
        await _run(session, callback)
    assert raised.value.__cause__ is error
    assert raised.value.has_error_label("UnknownTransactionCommitResult")
    assert session.commits == 1


async def test_unknown_commit_result_is_retried_within_the_budget(clock: Clock) -> None:
    errors: list[MongoError] = [_labelled("UnknownTransactionCommitResult", 91) for _ in range(3)]
    session = FakeSession(errors)

    async def callback(s: Any) -> int:
        return 7

    assert await _run(session, callback) == 7
    assert session.commits == 4 and session.started == 1


async def test_max_time_expired_commit_is_not_retried(clock: Clock) -> None:
    error = WriteConcernError("took too long", 50, {"code": 50})
    error._add_error_label("UnknownTransactionCommitResult")
    session = FakeSession([error])

    async def callback(s: Any) -> None:
        return None

    with pytest.raises(WriteConcernError) as raised:
        await _run(session, callback)
    assert raised.value is error and session.commits == 1


async def test_transient_commit_error_after_the_budget_is_a_network_timeout(
    clock: Clock,
) -> None:
    error = _labelled("TransientTransactionError", 251)  # NoSuchTransaction after a failover
    session = FakeSession([error])

    async def callback(s: Any) -> None:
        clock.now += wt.WITH_TRANSACTION_TIMEOUT_S - 0.001  # the backoff no longer fits

    with pytest.raises(NetworkTimeout) as raised:
        await _run(session, callback)
    assert raised.value.__cause__ is error
    assert raised.value.has_error_label("TransientTransactionError")
    assert session.started == 1  # no second attempt: backoff would cross the budget


async def test_timeout_ms_replaces_the_budget_and_raises_execution_timeout(
    clock: Clock,
) -> None:
    session = FakeSession()
    error = _labelled("TransientTransactionError")

    async def callback(s: Any) -> None:
        clock.now += 0.06
        raise error

    with pytest.raises(ExecutionTimeout) as raised:
        await _run(session, callback, timeout_ms=100)
    assert raised.value.timeout and raised.value.code == 50
    assert raised.value.__cause__ is error
    assert raised.value.has_error_label("TransientTransactionError")
    assert session.started == 2  # 60 ms, backoff, 120 ms: over 100 ms


async def test_an_error_that_already_is_a_timeout_propagates_as_is(clock: Clock) -> None:
    session = FakeSession()
    error = NetworkTimeout("socket timed out", error_labels=["TransientTransactionError"])

    async def callback(s: Any) -> None:
        clock.now += 1.0
        raise error

    with pytest.raises(NetworkTimeout) as raised:
        await _run(session, callback, timeout_ms=500)
    assert raised.value is error


async def test_errors_without_labels_are_never_retried(clock: Clock) -> None:
    session = FakeSession()

    class Custom(Exception):
        pass

    async def callback(s: Any) -> None:
        raise Custom()

    with pytest.raises(Custom):
        await _run(session, callback)
    assert session.started == 1 and session.aborts == 1


async def test_backoff_grows_and_is_capped(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    monkeypatch.setattr(wt, "sleep", sleep)
    session = FakeSession()
    calls = 0

    async def callback(s: Any) -> None:
        nonlocal calls
        calls += 1
        if calls <= 15:
            raise _labelled("TransientTransactionError")

    await _run(session, callback)
    assert slept[0] == pytest.approx(0.005 * 1.5)
    assert slept[1] == pytest.approx(0.005 * 1.5**2)
    assert max(slept) == wt.BACKOFF_MAX_S
    assert sum(slept) == pytest.approx(sum(min(0.005 * 1.5**n, 0.5) for n in range(1, 16)))


def test_budget_for_timeout_ms_zero_is_unlimited(clock: Clock) -> None:
    budget = wt.budget_for(0)
    clock.now += 10_000
    assert budget.csot and budget.allows(1.0)
    assert not wt.budget_for(None).csot


async def test_timeout_ms_is_one_deadline_for_the_callback_and_a_fresh_one_for_abort(
    clock: Clock,
) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    session = FakeSession()
    seen: list[float | None] = []

    async def callback(s: Any) -> None:
        seen.append(s._session_deadline)
        if len(seen) == 1:
            await asyncio.sleep(0.02)  # real time passes: the abort's deadline is later
            raise _labelled("TransientTransactionError")

    before = loop.time()
    await _run(session, callback, timeout_ms=5_000)
    assert seen[0] is not None and seen[0] == seen[1]  # one deadline for the whole call
    assert before + 5 <= seen[0] <= loop.time() + 5
    (abort_deadline,) = session.abort_deadlines
    assert abort_deadline is not None and abort_deadline > seen[0]  # refreshed for abort
    assert session._session_deadline is None  # cleared when the call ends


async def test_without_timeout_ms_operations_get_no_session_deadline(clock: Clock) -> None:
    session = FakeSession()
    seen: list[float | None] = []

    async def callback(s: Any) -> None:
        seen.append(s._session_deadline)

    await _run(session, callback)
    assert seen == [None]
