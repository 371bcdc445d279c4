"""``session.with_transaction(callback)``: the convenient transactions API's retry loop.

Runs the callback in a transaction and commits. A TransientTransactionError (from the
callback or the commit) restarts the whole transaction after an exponential backoff with
jitter; an UnknownTransactionCommitResult (except MaxTimeMSExpired) retries the commit. All
of it within a budget: the session's or client's ``timeoutMS`` when set (client-side
operations timeout spec), otherwise 120 seconds. When the budget leaves no room for another
attempt, the last error is raised wrapped in a timeout error (NetworkTimeout without
timeoutMS, ExecutionTimeout with it) that carries the same error labels and has the original
as its ``__cause__`` (convenient API spec, "Timeout error propagation").

With timeoutMS the whole call shares one deadline: the session carries it
(``_session_deadline``) and the executor caps every operation run in the session by
it; the abort after a failed callback gets a fresh timeoutMS (CSOT spec, "Convenient
Transactions API").
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, NoReturn, Protocol, TypeVar

from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.sessions import TxnState
from asyncmongo.core.sessions.labels import (
    MAX_TIME_MS_EXPIRED,
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_COMMIT_RESULT,
    is_max_time_expired,
)
from asyncmongo.errors import ExecutionTimeout, MongoError, NetworkTimeout
from asyncmongo.sessions.options import TransactionOptions


class TransactionSession(Protocol):
    """What the retry loop needs of a session (AsyncClientSession is one)."""

    _session_deadline: float | None
    _txn_state: TxnState

    @property
    def in_transaction(self) -> bool: ...

    def start_transaction(
        self,
        read_concern: ReadConcern | None = None,
        write_concern: WriteConcern | None = None,
        read_preference: ReadPreference | None = None,
        max_commit_time_ms: int | None = None,
    ) -> object: ...

    async def commit_transaction(self) -> None: ...

    async def abort_transaction(self) -> None: ...

    def _abandon_transaction(self) -> None: ...

__all__ = ["WITH_TRANSACTION_TIMEOUT_S", "run_with_transaction", "timeout_error"]

T = TypeVar("T")
S = TypeVar("S", bound="TransactionSession")

#: Convenient transactions API: how long with_transaction keeps retrying without timeoutMS.
WITH_TRANSACTION_TIMEOUT_S: Final = 120.0
#: Convenient transactions API: backoff before retrying a transaction (seconds).
BACKOFF_INITIAL_S: Final = 0.005
BACKOFF_MAX_S: Final = 0.5

#: The clock the budget is measured with, the jitter source and the sleep (tests replace
#: them: no test waits 120 real seconds).
monotonic: Callable[[], float] = time.monotonic
jitter: Callable[[], float] = random.random
sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """When with_transaction started and how long it may retry (``csot``: the limit is the
    user's timeoutMS, so running out is a client-side operations timeout)."""

    start: float
    limit_s: float
    csot: bool

    def elapsed(self) -> float:
        return monotonic() - self.start

    def allows(self, extra_s: float = 0.0) -> bool:
        """Room for another attempt after waiting ``extra_s``."""
        return self.elapsed() + extra_s < self.limit_s


def budget_for(timeout_ms: int | None) -> RetryBudget:
    """The budget for one call: timeoutMS if set (0: no limit), otherwise 120 seconds."""
    if timeout_ms is None:
        return RetryBudget(monotonic(), WITH_TRANSACTION_TIMEOUT_S, csot=False)
    limit = math.inf if timeout_ms == 0 else timeout_ms / 1000
    return RetryBudget(monotonic(), limit, csot=True)


def timeout_error(error: BaseException, *, csot: bool) -> BaseException:
    """The error to raise when the budget ran out after ``error`` (raise it ``from error``).

    An error that already is a timeout is propagated as is; otherwise a timeout error whose
    message contains the original's and which carries the original's labels."""
    if isinstance(error, MongoError) and error.timeout:
        return error
    labels = error.error_labels if isinstance(error, MongoError) else frozenset()
    message = f"with_transaction ran out of time; last error: {error}"
    if csot:
        details = {"ok": 0, "errmsg": message, "code": MAX_TIME_MS_EXPIRED}
        return ExecutionTimeout(message, MAX_TIME_MS_EXPIRED, details, labels)
    return NetworkTimeout(message, error_labels=labels)


def _raise_out_of_time(error: BaseException, budget: RetryBudget) -> NoReturn:
    wrapped = timeout_error(error, csot=budget.csot)
    if wrapped is error:
        raise error
    raise wrapped from error


async def run_with_transaction(
    session: S,
    callback: Callable[[S], Awaitable[T]],
    options: TransactionOptions,
    timeout_ms: int | None,
    block: float | None = None,
) -> T:
    """The spec's algorithm, step by step (see the module docstring). ``block``: the
    deadline of an enclosing ``asyncmongo.timeout()`` block (math.inf: no limit), which
    replaces ``timeout_ms``."""
    loop = asyncio.get_running_loop()
    if block is not None:
        timeout_ms = 0 if block == math.inf else max(1, math.ceil((block - loop.time()) * 1000))
    budget = budget_for(timeout_ms)
    deadline = loop.time() + budget.limit_s if budget.csot and budget.limit_s < math.inf else None
    if block is not None and block != math.inf:
        deadline = block
    session._session_deadline = deadline
    try:
        return await _run(session, callback, options, budget, deadline)
    finally:
        session._session_deadline = None


async def _run(
    session: S,
    callback: Callable[[S], Awaitable[T]],
    options: TransactionOptions,
    budget: RetryBudget,
    deadline: float | None,
) -> T:
    attempt = 0
    last_error: BaseException | None = None
    while True:
        if attempt:
            delay = jitter() * min(BACKOFF_INITIAL_S * 1.5**attempt, BACKOFF_MAX_S)
            if not budget.allows(delay):
                assert last_error is not None
                _raise_out_of_time(last_error, budget)
            await sleep(delay)
        session.start_transaction(
            options.read_concern,
            options.write_concern,
            options.read_preference,
            options.max_commit_time_ms,
        )
        attempt += 1
        try:
            result = await callback(session)
        except Exception as exc:
            if session.in_transaction:
                await _abort_with_fresh_timeout(session, budget, deadline)
            if isinstance(exc, MongoError) and exc.has_error_label(TRANSIENT_TRANSACTION_ERROR):
                if not budget.allows():
                    _raise_out_of_time(exc, budget)
                last_error = exc
                continue
            raise
        except BaseException:
            session._abandon_transaction()  # cancelled: no round trip while unwinding
            raise
        if session._txn_state is not TxnState.IN_PROGRESS:
            return result  # ended by the callback itself, or nothing ran (empty commit)
        transient = await _commit_with_retries(session, budget)
        if transient is None:
            return result
        last_error = transient


async def _abort_with_fresh_timeout(
    session: TransactionSession, budget: RetryBudget, deadline: float | None
) -> None:
    """CSOT: the abort after a failed callback gets a fresh timeoutMS, not what is left."""
    if deadline is not None:
        session._session_deadline = asyncio.get_running_loop().time() + budget.limit_s
    try:
        await session.abort_transaction()
    finally:
        session._session_deadline = deadline


async def _commit_with_retries(
    session: TransactionSession, budget: RetryBudget
) -> MongoError | None:
    """None once committed; the TransientTransactionError that restarts the transaction."""
    while True:
        try:
            await session.commit_transaction()
            return None
        except MongoError as exc:
            if exc.has_error_label(UNKNOWN_COMMIT_RESULT) and not is_max_time_expired(exc):
                if not budget.allows():
                    _raise_out_of_time(exc, budget)
                continue
            if exc.has_error_label(TRANSIENT_TRANSACTION_ERROR):
                return exc
            raise
