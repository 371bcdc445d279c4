"""Client backpressure: the prose tests of client-backpressure/tests/README.md (1, 3, 4, 5)
against asyncmongo.testing, the retryable reads/writes prose tests that mix overload and
other errors (retryable-reads 3.1, 3.3, 4, 5; retryable-writes 6: cases 1-5), and the
executor's backoff: its schedule, its jitter source, the deadline, cancellation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

import asyncmongo
from asyncmongo import AsyncMongoClient, CommandFailedEvent, CommandStartedEvent
from asyncmongo.core.backpressure import (
    backoff_seconds,
    base_backoff_ms_of,
    is_retryable_overload_error,
)
from asyncmongo.errors import MongoError, OperationFailure
from asyncmongo.runtime.executor import Executor
from asyncmongo.testing import ReplicaSet, Standalone

OVERLOAD = ["SystemOverloadedError", "RetryableError"]
#: The jitter "as close as possible to 1".
ALMOST_ONE = 1.0 - 2**-53


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


def server_code(error: MongoError) -> Any:
    """The server's error code (a state-change error is a NotPrimaryError, not an
    OperationFailure, as in PyMongo)."""
    details = getattr(error, "errors", None) or getattr(error, "details", None) or {}
    return details.get("code")


def failed(events: list[Any], name: str) -> list[CommandFailedEvent]:
    return [e for e in events if isinstance(e, CommandFailedEvent) and e.command_name == name]


async def executor_of(client: AsyncMongoClient[Any]) -> Executor:
    """The client's executor (its runtime opens with the first operation)."""
    await client.admin.command("ping")
    runtime = client._runtime
    assert runtime is not None
    return runtime.executor


class RecordedSleep:
    """A backoff sleep that records its delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


# -- the pure schedule -----------------------------------------------------------------------

def test_backoff_schedule() -> None:
    """backoff = jitter * min(MAX_BACKOFF, BASE_BACKOFF * 2**retry), the first retry is 1."""
    assert backoff_seconds(1, 1.0) == pytest.approx(0.2)
    assert backoff_seconds(2, 1.0) == pytest.approx(0.4)
    assert backoff_seconds(2, 0.5) == pytest.approx(0.2)
    assert backoff_seconds(1, 0.0) == 0.0
    assert backoff_seconds(20, 1.0) == pytest.approx(10.0)  # MAX_BACKOFF
    assert backoff_seconds(1, 1.0, 50.0) == pytest.approx(0.1)  # baseBackoffMS
    assert backoff_seconds(2, 1.0, 50.0) == pytest.approx(0.2)


def test_retryable_overload_needs_both_labels_and_base_backoff_is_read_from_the_reply() -> None:
    both = OperationFailure("x", 462, {"ok": 0, "errorLabels": OVERLOAD, "baseBackoffMS": 50})
    one = OperationFailure("x", 462, {"ok": 0, "errorLabels": ["SystemOverloadedError"]})
    assert is_retryable_overload_error(both)
    assert not is_retryable_overload_error(one)
    assert base_backoff_ms_of(both) == 50.0
    assert base_backoff_ms_of(one) is None
    zero = OperationFailure("x", 462, {"ok": 0, "baseBackoffMS": 0})
    assert base_backoff_ms_of(zero) is None  # only a positive value replaces BASE_BACKOFF


# -- backpressure README prose tests ---------------------------------------------------------

async def _timed_failing_insert(client: AsyncMongoClient[Any]) -> float:
    start = time.monotonic()
    with pytest.raises(OperationFailure):
        await client.db.coll.insert_one({"a": 1})
    return time.monotonic() - start


async def test_prose_1_operation_retry_uses_exponential_backoff() -> None:
    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        executor = await executor_of(client)
        with server.fail_point("alwaysOn", failCommands=["insert"], errorCode=2,
                               errorLabels=OVERLOAD):
            executor.jitter = lambda: 0.0
            no_backoff_time = await _timed_failing_insert(client)
            executor.jitter = lambda: ALMOST_ONE
            with_backoff_time = await _timed_failing_insert(client)
    # the sum of the two backoffs is 0.6 s, with a 0.6 s window for variance
    assert abs(with_backoff_time - (no_backoff_time + 0.6)) < 0.6
    assert with_backoff_time >= 0.6


@pytest.mark.parametrize(("options", "retries"), [({}, 2), ({"maxAdaptiveRetries": 1}, 1)])
async def test_prose_3_and_4_overload_errors_are_retried_max_adaptive_retries_times(
        options: dict[str, Any], retries: int) -> None:
    events: list[Any] = []
    async with Standalone() as server, AsyncMongoClient(
            server.uri, event_listeners=[events.append], **options) as client:
        (await executor_of(client)).jitter = lambda: 0.0
        with server.fail_point("alwaysOn", failCommands=["find"], errorCode=462,
                               errorLabels=OVERLOAD), pytest.raises(OperationFailure) as info:
            await client.db.coll.find_one({})
    assert info.value.has_error_label("RetryableError")
    assert info.value.has_error_label("SystemOverloadedError")
    assert len(started(events, "find")) == retries + 1


async def test_prose_5_base_backoff_ms_overrides_the_base_backoff() -> None:
    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        executor = await executor_of(client)
        executor.jitter = lambda: ALMOST_ONE
        with server.fail_point("alwaysOn", failCommands=["insert"], errorCode=462,
                               errorLabels=OVERLOAD):
            exponential_backoff_time = await _timed_failing_insert(client)
            await client.admin.command("setParameter", 1, externalClientBaseBackoffMS=50)
            start = time.monotonic()
            with pytest.raises(OperationFailure) as info:
                await client.db.coll.insert_one({"a": 1})
            with_base_backoff_ms_time = time.monotonic() - start
            await client.admin.command("setParameter", 1, externalClientBaseBackoffMS=0)
    assert base_backoff_ms_of(info.value) == 50.0  # the server attached it, the driver parsed it
    assert exponential_backoff_time >= 0.6
    assert with_base_backoff_ms_time >= 0.3
    assert with_base_backoff_ms_time < 0.6


# -- retryable reads / writes prose tests that involve overload errors -----------------------

def _on_first_failure(events: list[Any], name: str, action: Callable[[], object]) -> Callable[
        [Any], None]:
    """A listener recording events that runs ``action`` once, at the first failed ``name``
    ("configure the second fail point from the CommandFailedEvent")."""
    def listener(event: Any) -> None:
        events.append(event)
        if isinstance(event, CommandFailedEvent) and event.command_name == name:
            if len(failed(events, name)) == 1:
                action()
    return listener


async def test_reads_prose_4_overload_caps_all_retries_at_max_retries() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        listener = _on_first_failure(events, "find", lambda: server.fail_point(
            "alwaysOn", failCommands=["find"], errorCode=91, errorLabels=["RetryableError"]))
        async with AsyncMongoClient(server.uri, event_listeners=[listener]) as client:
            sleep = RecordedSleep()
            (await executor_of(client)).sleep = sleep
            with server.fail_point({"times": 1}, failCommands=["find"], errorCode=91,
                                   errorLabels=OVERLOAD), pytest.raises(MongoError):
                await client.db.coll.find_one({})
    assert len(started(events, "find")) == 3  # MAX_RETRIES + 1
    # reads prose 5: a backoff only before the retry of the overload error
    assert len(sleep.delays) == 1


async def test_writes_prose_6_case_4_and_5_overload_then_retryable_write_errors() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=1) as server:
        listener = _on_first_failure(events, "insert", lambda: server.fail_point(
            "alwaysOn", failCommands=["insert"], errorCode=91,
            errorLabels=["RetryableError", "RetryableWriteError"]))
        async with AsyncMongoClient(server.uri, event_listeners=[listener]) as client:
            sleep = RecordedSleep()
            (await executor_of(client)).sleep = sleep
            with server.fail_point({"times": 1}, failCommands=["insert"], errorCode=91,
                                   errorLabels=OVERLOAD), pytest.raises(MongoError):
                await client.db.coll.insert_one({"a": 1})
    assert len(started(events, "insert")) == 3  # case 4: MAX_RETRIES + 1
    assert len(sleep.delays) == 1  # case 5: no backoff for the non-overload errors


@pytest.mark.parametrize(
    ("first", "then", "code", "no_writes_label"),
    [
        # case 1: no NoWritesPerformed anywhere: the last error
        (OVERLOAD, OVERLOAD, 10107, False),
        # case 2: NoWritesPerformed everywhere: the first error
        ([*OVERLOAD, "NoWritesPerformed"], [*OVERLOAD, "NoWritesPerformed"], 91, True),
        # case 3: the first without, the rest with: the first (a write was attempted)
        (OVERLOAD, [*OVERLOAD, "NoWritesPerformed"], 91, False),
    ],
)
async def test_writes_prose_6_cases_1_to_3_error_propagation(
        first: list[str], then: list[str], code: int, no_writes_label: bool) -> None:
    events: list[Any] = []
    second_code = 10107 if code == 10107 else 91
    async with ReplicaSet(members=1) as server:
        listener = _on_first_failure(events, "insert", lambda: server.fail_point(
            "alwaysOn", failCommands=["insert"], errorCode=second_code, errorLabels=then))
        async with AsyncMongoClient(server.uri, event_listeners=[listener]) as client:
            (await executor_of(client)).jitter = lambda: 0.0
            with server.fail_point({"times": 1}, failCommands=["insert"], errorCode=91,
                                   errorLabels=first), pytest.raises(MongoError) as info:
                await client.db.coll.insert_one({"a": 1})
    assert server_code(info.value) == code
    assert info.value.has_error_label("NoWritesPerformed") is no_writes_label
    assert len(started(events, "insert")) == 3


@pytest.mark.parametrize(("retargeting", "same_server"), [(True, False), (False, True)])
async def test_reads_prose_3_1_and_3_3_overload_retargeting(retargeting: bool,
                                                            same_server: bool) -> None:
    events: list[Any] = []
    async with ReplicaSet(members=2) as rs, AsyncMongoClient(
            rs.uri, readPreference="primaryPreferred", enableOverloadRetargeting=retargeting,
            event_listeners=[events.append]) as client:
        (await executor_of(client)).jitter = lambda: 0.0
        await _wait_for_secondary(client)
        events.clear()
        with rs.fail_point({"times": 1}, failCommands=["find"], errorCode=6,
                           errorLabels=OVERLOAD):
            await client.db.coll.find_one({})
    fails, succeeded = failed(events, "find"), _succeeded(events, "find")
    assert len(fails) == 1 and len(succeeded) == 1
    assert (fails[0].connection_id[:2] == succeeded[0].connection_id[:2]) is same_server


async def test_reads_prose_3_2_non_overload_errors_retry_on_the_same_server() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=2) as rs, AsyncMongoClient(
            rs.uri, readPreference="primaryPreferred", enableOverloadRetargeting=True,
            event_listeners=[events.append]) as client:
        await _wait_for_secondary(client)
        events.clear()
        with rs.fail_point({"times": 1}, failCommands=["find"], errorCode=6,
                           errorLabels=["RetryableError"]):
            await client.db.coll.find_one({})
    fails, succeeded = failed(events, "find"), _succeeded(events, "find")
    assert len(fails) == 1 and len(succeeded) == 1
    assert fails[0].connection_id[:2] == succeeded[0].connection_id[:2]


def _succeeded(events: list[Any], name: str) -> list[Any]:
    return [e for e in events if type(e).__name__ == "CommandSucceededEvent"
            and e.command_name == name]


async def _wait_for_secondary(client: AsyncMongoClient[Any]) -> None:
    runtime = client._runtime
    assert runtime is not None
    topology = runtime.topology
    async with asyncio.timeout(10):
        while not any(s.server_type.name == "RS_SECONDARY"
                      for s in topology.description.servers.values()):
            await topology.wait_for_change(1.0)


# -- which commands, the deadline, cancellation ----------------------------------------------

async def test_run_command_needs_both_retry_reads_and_retry_writes() -> None:
    events: list[Any] = []
    for options, attempts in (({}, 2), ({"retryReads": False}, 1), ({"retryWrites": False}, 1)):
        events.clear()
        async with Standalone() as server, AsyncMongoClient(
                server.uri, event_listeners=[events.append], **options) as client:
            (await executor_of(client)).jitter = lambda: 0.0
            with server.fail_point({"times": 1}, failCommands=["ping"], errorCode=2,
                                   errorLabels=OVERLOAD):
                if attempts == 1:
                    with pytest.raises(OperationFailure):
                        await client.db.command("ping")
                else:
                    await client.db.command("ping")
        assert len(started(events, "ping")) == 1 + attempts, options


async def test_one_label_alone_is_not_retried() -> None:
    events: list[Any] = []
    async with Standalone() as server, AsyncMongoClient(
            server.uri, event_listeners=[events.append]) as client:
        for labels in (["SystemOverloadedError"], ["RetryableError"]):
            events.clear()
            with server.fail_point({"times": 1}, failCommands=["update"], errorCode=2,
                                   errorLabels=labels), pytest.raises(OperationFailure):
                await client.db.coll.update_many({}, {"$set": {"a": 1}})
    # updateMany is not a retryable write: only both labels make it retryable
    assert len(started(events, "update")) == 1


async def test_a_backoff_past_the_deadline_ends_the_operation_at_once() -> None:
    events: list[Any] = []
    async with Standalone() as server, AsyncMongoClient(
            server.uri, event_listeners=[events.append]) as client:
        executor = await executor_of(client)
        executor.jitter = lambda: ALMOST_ONE
        with server.fail_point("alwaysOn", failCommands=["find"], errorCode=462,
                               errorLabels=OVERLOAD):
            start = time.monotonic()
            with asyncmongo.timeout(0.3), pytest.raises(MongoError) as info:
                await client.db.coll.find_one({})
            elapsed = time.monotonic() - start
    # the first backoff (0.2 s) fits, the second (0.4 s) would end past the deadline
    assert len(started(events, "find")) == 2
    assert info.value.has_error_label("SystemOverloadedError")
    assert elapsed < 0.3


async def test_cancelled_during_backoff_leaves_no_connection_checked_out() -> None:
    entered = asyncio.Event()

    async def slow_sleep(delay: float) -> None:
        entered.set()
        await asyncio.sleep(3600)

    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        executor = await executor_of(client)
        executor.sleep = slow_sleep
        with server.fail_point("alwaysOn", failCommands=["find"], errorCode=462,
                               errorLabels=OVERLOAD):
            task = asyncio.ensure_future(client.db.coll.find_one({}))
            await entered.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        runtime = client._runtime
        assert runtime is not None
        pools = [member.pool for member in runtime.topology.servers.values()]
        assert all(pool.statistics().in_use == 0 for pool in pools), [repr(p) for p in pools]
        assert await client.db.coll.find_one({}) is None  # the client works on


async def test_the_jitter_source_sets_the_schedule() -> None:
    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        executor = await executor_of(client)
        sleep = RecordedSleep()
        executor.sleep = sleep
        executor.jitter = lambda: 0.5
        with server.fail_point("alwaysOn", failCommands=["find"], errorCode=462,
                               errorLabels=OVERLOAD), pytest.raises(OperationFailure):
            await client.db.coll.find_one({})
    assert sleep.delays == pytest.approx([0.1, 0.2])



async def test_a_retried_commit_takes_majority_only_after_a_non_overload_error() -> None:
    """Transactions spec, "Interaction with Client Backpressure": a commit retried after only
    overload errors keeps its write concern; after any other error, w: majority."""
    events: list[Any] = []
    async with ReplicaSet(members=1) as rs:
        listener = _on_first_failure(events, "commitTransaction", lambda: rs.fail_point(
            {"times": 1}, failCommands=["commitTransaction"], errorCode=91,
            errorLabels=["RetryableWriteError"]))
        async with AsyncMongoClient(rs.uri, event_listeners=[listener]) as client:
            (await executor_of(client)).jitter = lambda: 0.0
            await client.db.coll.insert_one({"_id": 0})
            async with client.start_session() as session:
                session.start_transaction()
                await client.db.coll.insert_one({"_id": 1}, session=session)
                with rs.fail_point({"times": 1}, failCommands=["commitTransaction"],
                                   errorCode=91, errorLabels=OVERLOAD):
                    await session.commit_transaction()
            assert await client.db.coll.count_documents({}) == 2
    concerns = [e.command.get("writeConcern") for e in started(events, "commitTransaction")]
    assert len(concerns) == 3
    assert concerns[0] is None and concerns[1] is None  # the overload error did no work
    assert concerns[2] is not None and concerns[2]["w"] == "majority"
