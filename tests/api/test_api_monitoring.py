"""Command monitoring: events around every command, redaction, log messages, ``events()``,
coroutine listeners (specs/command-logging-and-monitoring)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from asyncmongo import (
    AsyncMongoClient,
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    InsertOne,
    WriteConcern,
)
from asyncmongo.errors import AutoReconnect, BulkWriteError, OperationFailure
from asyncmongo.monitoring import ConnectionCheckedInEvent
from asyncmongo.monitoring.command import failure_document, is_sensitive, redacted_failure
from asyncmongo.monitoring.command_log import CommandLogMessage, truncate
from asyncmongo.testing import Standalone


def command_events(events: list[Any]) -> list[Any]:
    """The command events of the test's own operations (not the endSessions of close())."""
    kinds = (CommandStartedEvent, CommandSucceededEvent, CommandFailedEvent)
    return [e for e in events if isinstance(e, kinds) and e.command_name != "endSessions"]


async def test_started_and_succeeded_pair_up() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            await client.db.coll.insert_one({"_id": 1, "a": 1})
    started, succeeded = command_events(events)
    assert isinstance(started, CommandStartedEvent) and isinstance(succeeded, CommandSucceededEvent)
    assert started.command_name == succeeded.command_name == "insert"
    assert started.database_name == "db"
    assert started.request_id == succeeded.request_id
    assert started.operation_id == succeeded.operation_id
    assert started.connection_id == succeeded.connection_id
    host, port = started.connection_id
    assert (host, port) == ("127.0.0.1", server.server.port)
    # the document sequence is shown as an array, and $db is part of the command
    assert started.command["documents"] == [{"_id": 1, "a": 1}]
    assert started.command["$db"] == "db"
    assert succeeded.reply["n"] == 1 and succeeded.duration_micros >= 0
    assert isinstance(started.server_connection_id, int)


async def test_failed_command_and_write_errors() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            with pytest.raises(OperationFailure):
                await client.db.command("noSuchCommand")
            await client.db.coll.insert_one({"_id": 1})
            with pytest.raises(BulkWriteError):
                await client.db.coll.bulk_write([InsertOne({"_id": 1})])
    monitored = command_events(events)
    failed = monitored[1]
    assert isinstance(failed, CommandFailedEvent)
    assert failed.failure["code"] == 59 and failed.command_name == "noSuchCommand"
    # a write error is still a succeeded command (spec: "Succeeded or Failed")
    assert isinstance(monitored[-1], CommandSucceededEvent)
    assert monitored[-1].reply["writeErrors"][0]["code"] == 11000


async def test_network_failure_publishes_failed_with_the_exception() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(
            server.uri, event_listeners=[events.append], serverSelectionTimeoutMS=500
        ) as client:
            await client.db.command("ping")
            with server.fail_point({"times": 1}, failCommands=["ping"], closeConnection=True):
                with pytest.raises(AutoReconnect):
                    await client.db.command("ping")
    failed = [e for e in events if isinstance(e, CommandFailedEvent)]
    assert len(failed) == 1 and failed[0].exception is not None
    assert "errtype" in failed[0].failure


async def test_unacknowledged_write_succeeds_with_ok_1() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            coll = client.db.get_collection("coll", write_concern=WriteConcern(w=0))
            await coll.insert_one({"_id": 1})
    started, succeeded = command_events(events)
    assert started.command["writeConcern"] == {"w": 0}
    assert isinstance(succeeded, CommandSucceededEvent) and succeeded.reply == {"ok": 1}


async def test_bulk_batches_share_one_operation_id() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            big = "x" * (1024 * 1024)
            await client.db.coll.insert_many([{"s": big} for _ in range(60)])
    started = [e for e in command_events(events) if isinstance(e, CommandStartedEvent)]
    assert len(started) >= 2  # 60 MiB does not fit in one 48 MB message
    assert len({e.operation_id for e in started}) == 1
    assert sum(len(e.command["documents"]) for e in started) == 60


@pytest.mark.parametrize(
    ("name", "command", "sensitive"),
    [
        ("saslStart", {"saslStart": 1}, True),
        ("SASLCONTINUE", {}, True),
        ("authenticate", {}, True),
        ("createUser", {}, True),
        ("updateUser", {}, True),
        ("copydb", {}, True),
        ("hello", {"hello": 1, "speculativeAuthenticate": {}}, True),
        ("isMaster", {"isMaster": 1, "speculativeAuthenticate": {}}, True),
        ("hello", {"hello": 1}, False),
        ("ping", {"ping": 1}, False),
    ],
)
def test_sensitive_commands(name: str, command: dict[str, Any], sensitive: bool) -> None:
    assert is_sensitive(name, command) is sensitive


async def test_sensitive_command_is_redacted() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            reply = await client.admin.command({"hello": 1, "speculativeAuthenticate": {"x": 1}})
            assert reply["ok"] == 1
    started, succeeded = command_events(events)
    assert started.command == {} and succeeded.reply == {}
    assert redacted_failure({"code": 18, "codeName": "AuthenticationFailed", "errmsg": "s"}) == {
        "code": 18,
        "codeName": "AuthenticationFailed",
    }


def test_failure_document_of_exceptions() -> None:
    failure = failure_document(OperationFailure("bad", 2, {"ok": 0, "code": 2}))
    assert failure == {"ok": 0, "code": 2}
    assert failure_document(ValueError("x")) == {"errmsg": "x", "errtype": "ValueError"}
    assert truncate("a" * 1001) == "a" * 1000 + "..."
    assert truncate("abc") == "abc"


async def test_command_log_messages(caplog: pytest.LogCaptureFixture) -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            with caplog.at_level(logging.DEBUG, logger="asyncmongo.command"):
                await client.db.command("ping")
                with pytest.raises(OperationFailure):
                    await client.db.command("noSuchCommand")
    messages = [r.msg for r in caplog.records if r.name == "asyncmongo.command"]
    assert all(isinstance(m, CommandLogMessage) for m in messages)
    fields = [m.fields for m in messages if isinstance(m, CommandLogMessage)]
    assert [f["message"] for f in fields] == [
        "Command started",
        "Command succeeded",
        "Command started",
        "Command failed",
    ]
    assert fields[0]["commandName"] == "ping" and fields[0]["databaseName"] == "db"
    assert fields[0]["requestId"] == fields[1]["requestId"]
    assert fields[0]["serverHost"] == "127.0.0.1" and fields[0]["serverPort"] == server.server.port
    assert '"ping": 1' in fields[0]["command"]
    assert "durationMS" in fields[1] and '"ok": 1' in fields[1]["reply"]
    assert "59" in fields[3]["failure"]
    assert str(messages[0]).startswith('Command "ping" started on database "db"')


async def test_events_iterator_and_coroutine_listeners() -> None:
    seen_by_coroutine: list[Any] = []

    async def listener(event: Any) -> None:
        await asyncio.sleep(0)
        seen_by_coroutine.append(event)

    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[listener]) as client:
            names: list[str] = []
            stream = client.events()  # subscribed from here on, before anything awaits

            async def consume() -> None:
                async for event in stream:
                    if isinstance(event, CommandSucceededEvent):
                        names.append(event.command_name)
                        if len(names) == 2:
                            return

            consumer = asyncio.create_task(consume())
            await client.db.command("ping")
            await client.db.coll.insert_one({})
            await asyncio.wait_for(consumer, 5)
            assert names == ["ping", "insert"]
            for _ in range(100):
                if any(isinstance(e, CommandSucceededEvent) for e in seen_by_coroutine):
                    break
                await asyncio.sleep(0.001)
    assert any(isinstance(e, CommandStartedEvent) for e in seen_by_coroutine)
    assert any(type(e).__name__ == "TopologyOpeningEvent" for e in seen_by_coroutine)


@pytest.mark.parametrize("observe_events", [False, True])
async def test_events_yields_sdam_heartbeat_and_cmap_events(observe_events: bool) -> None:
    async with Standalone() as server:
        client = AsyncMongoClient(server.uri, observe_events=observe_events)
        kinds: set[str] = set()
        stream = client.events()

        async def consume() -> None:
            async for event in stream:
                kinds.add(type(event).__name__)
                if "CommandSucceededEvent" in kinds and "ConnectionCheckedInEvent" in kinds:
                    return

        consumer = asyncio.create_task(consume())
        try:
            await client.db.command("ping")
            await asyncio.wait_for(consumer, 5)
        finally:
            await client.close()
    assert {
        "TopologyOpeningEvent",
        "ServerHeartbeatStartedEvent",
        "ConnectionCheckedOutEvent",
        "CommandStartedEvent",
    } <= kinds


async def test_pools_build_cmap_events_only_while_subscribed() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            await client.db.command("ping")
            (pool,) = [s.pool for s in client._topology_runtime.servers.values()]
            assert pool._listener is None
            stream = client.events()
            assert pool._listener is not None
            await client.db.command("ping")
            seen = [type(await stream.__anext__()).__name__ for _ in range(2)]
            assert seen == ["ConnectionCheckOutStartedEvent", "ConnectionCheckedOutEvent"]
            await stream.aclose()  # type: ignore[attr-defined]
            assert pool._listener is None


async def test_no_listener_builds_no_event() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            await client.db.command("ping")
            executor = client._executor
            assert executor is not None and executor.events.publish is None


async def test_events_backlog_drops_the_oldest_and_unsubscribes_on_close() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            stream = client.events(backlog=3)
            for _ in range(3):
                await client.db.command("ping")
            first = await stream.__anext__()
            assert isinstance(first, CommandStartedEvent)  # the last ping's events are kept
            assert isinstance(await stream.__anext__(), CommandSucceededEvent)
            assert isinstance(await stream.__anext__(), ConnectionCheckedInEvent)
            await stream.aclose()  # type: ignore[attr-defined]
            assert client._events.subscribers == 0
            executor = client._executor
            assert executor is not None and executor.events.publish is None


async def test_network_error_of_a_sensitive_command_is_not_redacted() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            with server.fail_point({"times": 1}, failCommands=["createUser"], closeConnection=True):
                with pytest.raises(AutoReconnect):
                    await client.db.command({"createUser": "u", "pwd": "p", "roles": []})
            with server.fail_point({"times": 1}, failCommands=["createUser"], errorCode=11):
                with pytest.raises(OperationFailure):
                    await client.db.command({"createUser": "u", "pwd": "p", "roles": []})
    started = [e for e in events if isinstance(e, CommandStartedEvent)]
    assert all(e.command == {} for e in started if e.command_name == "createUser")
    network, server_error = [e for e in events if isinstance(e, CommandFailedEvent)]
    assert network.failure.get("errtype") and network.failure.get("errmsg")  # kept
    assert set(server_error.failure) <= {"code", "codeName", "errorLabels"}  # redacted
    assert server_error.failure["code"] == 11
