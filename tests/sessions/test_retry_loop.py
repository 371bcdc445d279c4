"""The executor's retry loop over scripted attempts (no network): one retry for retryable
reads and writes, the original error when the retry finds no server or says
NoWritesPerformed, deprioritized mongos on sharded retries, retryWrites/retryReads off."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from asyncmongo.core.address import Address
from asyncmongo.core.operations.base import Target
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import Selection
from asyncmongo.errors import (
    AutoReconnect,
    OperationFailure,
    ServerSelectionTimeoutError,
)
from asyncmongo.runtime.attempt import is_retryable_write_operation
from asyncmongo.runtime.executor import Executor

A: Address = ("a", 1)
B: Address = ("b", 2)


class FakeSession:
    """Just enough of AsyncClientSession for the executor."""

    _implicit = True
    _session_deadline = None

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.released = False
        self.txn_number = 0

    def _prepare(self, name: str, *, acknowledged: bool) -> Any:
        return SimpleNamespace(in_transaction=False, starting=False)

    def _next_txn_number(self) -> int:
        self.txn_number += 1
        return self.txn_number

    def _on_error(self, exc: BaseException, step: Any, name: str) -> None:
        self.errors.append(exc)

    def _release(self) -> None:
        self.released = True

    def _observe(self, reply: Any, address: Any, sharded: bool) -> None:
        pass


class FakePool:
    """Hands out a connection without a handshake reply to gossip."""

    def try_check_out(self) -> Any:
        return None  # always the full checkout

    async def check_out(self, deadline: float | None = None) -> Any:
        return SimpleNamespace(hello={})


class ScriptedExecutor(Executor):
    """Selection and attempts follow a script (an outcome per attempt)."""

    def __init__(self, outcomes: list[Any], topology_type: TopologyType, **options: bool) -> None:
        # route: no remembered selection, so every attempt goes through _server_for
        topology = SimpleNamespace(
            description=SimpleNamespace(topology_type=topology_type, servers={}),
            route=lambda selection: None,
        )
        session = FakeSession()
        super().__init__(
            topology,  # type: ignore[arg-type]
            implicit_session=lambda: session,  # type: ignore[arg-type,return-value]
            retry_writes=options.get("retry_writes", True),
            retry_reads=options.get("retry_reads", True),
        )
        self.outcomes = outcomes
        self.selected: list[list[Address]] = []
        self.ran_on: list[Address] = []
        self.session = session

    async def _server_for(
        self,
        target: Target,
        deadline: float | None,
        name: str,
        deprioritized: Any = (),
        operation_id: int | None = None,
    ) -> Any:
        self.selected.append(list(deprioritized))
        if len(self.selected) > 1 and isinstance(self.outcomes[0], ServerSelectionTimeoutError):
            raise self.outcomes.pop(0)
        address = A if len(self.selected) == 1 else B
        return SimpleNamespace(address=address, operation_count=0, pool=FakePool())

    async def _execute(
        self,
        server: Any,
        conn: Any,
        lease: Any,
        op: Any,
        deadline: Any,
        operation_id: Any,
        read_preference: Any,
    ) -> Any:
        self.ran_on.append(server.address)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def _insert() -> Any:
    return SimpleNamespace(
        name="insert",
        target=Target.write(),
        statements=[SimpleNamespace(multi=False)],
        start=0,
        acknowledged=True,
    )


def _find() -> Any:
    return SimpleNamespace(name="find", target=Target(Selection.read()), acknowledged=True)


def _failure(code: int, *labels: str) -> OperationFailure:
    return OperationFailure("failed", code, {"code": code, "errorLabels": list(labels)})


async def test_a_network_error_is_retried_once() -> None:
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY
    )
    result = await executor.run(_insert())
    assert (result, executor.ran_on[-1]) == ("ok", B)
    assert executor.session.txn_number == 1  # the retry reuses the transaction number
    assert executor.session.released
    assert executor.selected == [[], []]  # not sharded: nothing deprioritized


async def test_the_second_error_is_raised() -> None:
    second = _failure(262, "RetryableWriteError")
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), second], TopologyType.REPLICA_SET_WITH_PRIMARY
    )
    with pytest.raises(OperationFailure) as raised:
        await executor.run(_insert())
    assert raised.value is second


async def test_no_writes_performed_raises_the_first_error() -> None:
    first = AutoReconnect("reset")
    second = _failure(262, "RetryableWriteError", "NoWritesPerformed")
    executor = ScriptedExecutor([first, second], TopologyType.REPLICA_SET_WITH_PRIMARY)
    with pytest.raises(AutoReconnect) as raised:
        await executor.run(_insert())
    assert raised.value is first
    assert first.has_error_label("RetryableWriteError")


async def test_no_server_for_the_retry_raises_the_first_error() -> None:
    first = AutoReconnect("reset")
    executor = ScriptedExecutor(
        [first, ServerSelectionTimeoutError("none")], TopologyType.REPLICA_SET_WITH_PRIMARY
    )
    with pytest.raises(AutoReconnect) as raised:
        await executor.run(_insert())
    assert raised.value is first


async def test_non_retryable_errors_are_not_retried() -> None:
    error = _failure(11000)
    executor = ScriptedExecutor([error, "never"], TopologyType.REPLICA_SET_WITH_PRIMARY)
    with pytest.raises(OperationFailure):
        await executor.run(_insert())
    assert executor.outcomes == ["never"]


async def test_sharded_retry_deprioritizes_the_failed_mongos() -> None:
    executor = ScriptedExecutor([AutoReconnect("reset"), "ok"], TopologyType.SHARDED)
    await executor.run(_insert())
    assert executor.selected == [[], [A]]


async def test_retry_writes_false() -> None:
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY, retry_writes=False
    )
    with pytest.raises(AutoReconnect):
        await executor.run(_insert())
    assert executor.session.txn_number == 0  # no txnNumber without retryable writes


async def test_multi_document_writes_are_not_retried() -> None:
    op = _insert()
    op.name = "update"
    op.statements = [SimpleNamespace(multi=True)]
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY
    )
    with pytest.raises(AutoReconnect):
        await executor.run(op)


@pytest.mark.parametrize(
    ("multi", "start", "retryable"),
    [
        ([False], 0, True),
        ([True], 0, False),
        ([False, True], 0, False),
        ([True, False], 0, False),
        ([True, False], 1, True),  # a later batch: only what is left to send counts
        ([False, True], 1, False),
        ([False, False, False], 1, True),
    ],
)
@pytest.mark.parametrize("name", ["update", "delete"])
def test_an_update_or_delete_is_retryable_when_no_statement_left_is_multi(
    name: str, multi: list[bool], start: int, retryable: bool
) -> None:
    op = SimpleNamespace(
        name=name, statements=[SimpleNamespace(multi=m) for m in multi], start=start
    )
    assert is_retryable_write_operation(op) is retryable


async def test_reads_retry_once_and_respect_retry_reads() -> None:
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY
    )
    assert await executor.run(_find()) == "ok"
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY, retry_reads=False
    )
    with pytest.raises(AutoReconnect):
        await executor.run(_find())
    executor = ScriptedExecutor([_failure(2), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY)
    with pytest.raises(OperationFailure):
        await executor.run(_find())


async def test_get_more_is_not_retried() -> None:
    op = SimpleNamespace(name="getMore", target=Target.pinned(A), cursor_id=5, acknowledged=True)
    executor = ScriptedExecutor(
        [AutoReconnect("reset"), "ok"], TopologyType.REPLICA_SET_WITH_PRIMARY
    )
    with pytest.raises(AutoReconnect):
        await executor.run(op)


def test_explicit_session_needs_a_deployment_that_supports_sessions() -> None:
    from asyncmongo.core.operations.base import Command
    from asyncmongo.errors import ConfigurationError
    from asyncmongo.runtime.attempt import ClusterTimeKeeper, SessionOperation

    session: Any = FakeSession()
    session._implicit = False
    op = _find()
    op.build = lambda conn: Command("db", {"find": "c"})
    conn: Any = SimpleNamespace(
        max_wire_version=17, supports_sessions=False, supports_retryable_writes=False
    )
    clock = ClusterTimeKeeper()
    attempt = SessionOperation(op, session, clock, retry_writes=True, retry_reads=True)
    with pytest.raises(ConfigurationError, match="not supported"):
        attempt.build(conn)
    implicit: Any = FakeSession()
    attempt = SessionOperation(op, implicit, clock, retry_writes=True, retry_reads=True)
    assert "lsid" not in attempt.build(conn).document  # implicit: silently without one


async def test_a_deployment_without_retryable_writes_is_explained() -> None:
    refusal = OperationFailure(
        "Transaction numbers are only allowed on a replica set member or mongos", 20, {"code": 20}
    )
    executor = ScriptedExecutor([refusal], TopologyType.REPLICA_SET_WITH_PRIMARY)
    with pytest.raises(OperationFailure, match="retryWrites=false") as raised:
        await executor.run(_insert())
    assert raised.value.__cause__ is refusal
