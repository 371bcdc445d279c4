"""The simulated server over raw sockets: legacy hello, streaming and exhaust, compression,
faults (garbage, truncation, partitions, slowness, stop/start), fail points, roles, auth."""

from __future__ import annotations

import asyncio
import time

import pytest

from asyncmongo.bson import Int64, ObjectId
from asyncmongo.core.wire.compression import Compressor
from asyncmongo.core.wire.opcodes import OpCode, OpMsgFlags
from asyncmongo.testing import LoadBalanced, ReplicaSet, Role, SimServer, Standalone
from asyncmongo.testing.member import MemberConfig
from tests.testing.raw_client import RawClient, wait_until

pytestmark = pytest.mark.timeout(30)

HELLO = {"hello": 1, "$db": "admin"}


async def test_legacy_op_query_hello_gets_op_reply() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            request_id = await client.send_query({"isMaster": 1, "helloOk": True,
                                                  "compression": ["zstd", "snappy", "lz4"]})
            reply = await client.read()
            assert (reply.opcode, reply.response_to) == (OpCode.OP_REPLY, request_id)
            doc = reply.document
            assert doc["ismaster"] is True and "isWritablePrimary" not in doc
            assert doc["helloOk"] is True
            assert doc["compression"] == ["zstd", "snappy"]
            assert doc["maxWireVersion"] == 25 and doc["minWireVersion"] == 0
            assert doc["connectionId"] == 1
            assert doc["topologyVersion"]["processId"] == server.clock.process_id
            await client.send_query({"find": "c"}, namespace="db.$cmd")
            refused = (await client.read()).document
            assert (refused["ok"], refused["code"]) == (0.0, 352)
        finally:
            await client.close()


async def test_hello_over_op_msg_and_polling_mode() -> None:
    async with SimServer(streaming=False) as server:
        client = await RawClient.connect(server.port)
        try:
            doc = await client.command(HELLO)
            assert doc["isWritablePrimary"] is True and "ismaster" not in doc
            assert "topologyVersion" not in doc
            assert doc["logicalSessionTimeoutMinutes"] == 30
        finally:
            await client.close()


async def test_awaitable_hello_waits_for_change_or_timeout() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            tv = (await client.command(HELLO))["topologyVersion"]
            start = time.monotonic()
            await client.command({**HELLO, "topologyVersion": tv, "maxAwaitTimeMS": 150})
            assert time.monotonic() - start >= 0.14
            start = time.monotonic()
            waiting = asyncio.ensure_future(client.command(
                {**HELLO, "topologyVersion": tv, "maxAwaitTimeMS": 5000}))
            await asyncio.sleep(0.05)
            server.set_role(Role.STANDALONE)
            doc = await waiting
            assert time.monotonic() - start < 1
            assert doc["topologyVersion"]["counter"] == Int64(1)
            stale = {"processId": tv["processId"], "counter": Int64(0)}
            start = time.monotonic()
            await client.command({**HELLO, "topologyVersion": stale, "maxAwaitTimeMS": 5000})
            assert time.monotonic() - start < 1
        finally:
            await client.close()


async def test_exhaust_hello_streams_more_to_come_replies() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            tv = (await client.command(HELLO))["topologyVersion"]
            request_id = await client.send_msg(
                {**HELLO, "topologyVersion": tv, "maxAwaitTimeMS": 100},
                flags=OpMsgFlags.EXHAUST_ALLOWED)
            first = await client.read()
            assert first.more_to_come and first.response_to == request_id
            second = await client.read()  # after maxAwaitTimeMS, unasked
            assert second.more_to_come and second.response_to == first.request_id
            server.set_role(Role.STANDALONE)
            third = await client.read()
            assert third.document["topologyVersion"]["counter"] == Int64(1)
            assert third.response_to == second.request_id
        finally:
            await client.close()
        await wait_until(lambda: server.connection_count == 0, within=2)


async def test_compressed_requests_get_compressed_replies() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            for compressor in (Compressor.ZLIB, Compressor.ZSTD, Compressor.SNAPPY):
                await client.send_msg({"ping": 1, "$db": "admin"}, compressor=compressor)
                reply = await client.read()
                assert reply.compressed and reply.document["ok"] == 1.0
            await client.send_msg(HELLO, compressor=Compressor.ZLIB)
            assert not (await client.read()).compressed  # hello is never compressed
            assert server.compressed_requests == {"zlib": 2, "zstd": 1, "snappy": 1}
        finally:
            await client.close()


async def test_garbage_and_truncated_replies() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            server.send_garbage()
            await client.send_msg({"ping": 1, "$db": "admin"})
            (_, _, _, opcode), _ = await client.read_raw()
            assert opcode not in {int(op) for op in OpCode}
            server.send_garbage(commands=["hello"])
            assert (await client.command({"ping": 1, "$db": "admin"}))["ok"] == 1.0
            await client.send_msg(HELLO)  # the fault waited for a hello
            (_, _, _, opcode), _ = await client.read_raw()
            assert opcode not in {int(op) for op in OpCode}
            server.send_truncated()
            assert (await client.command(HELLO))["ok"] == 1.0  # monitors are spared
            await client.send_msg({"ping": 1, "$db": "admin"})
            with pytest.raises(asyncio.IncompleteReadError):
                await client.read()
        finally:
            await client.close()


async def test_partitions_slowness_and_restarts() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            await server.partition("silent")
            await client.send_msg({"ping": 1, "$db": "admin"})
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await client.read()
            await server.heal()
            assert (await client.command({"ping": 1, "$db": "admin"}))["ok"] == 1.0
            await server.partition("refuse")
            with pytest.raises(OSError):
                await RawClient.connect(server.port)
            await server.heal()
        finally:
            await client.close()
        client = await RawClient.connect(server.port)
        try:
            server.slow(100)
            start = time.monotonic()
            await client.command({"ping": 1, "$db": "admin"})
            assert time.monotonic() - start >= 0.09
            server.slow(0)
        finally:
            await client.close()
        before = server.clock.process_id
        await server.restart()
        assert server.clock.process_id != before and server.clock.counter == 0


async def test_fail_point_modes_and_actions() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        ping = {"ping": 1, "$db": "admin"}
        try:
            reply = await client.command({"configureFailPoint": "failCommand",
                                          "mode": {"skip": 1}, "$db": "admin",
                                          "data": {"failCommands": ["ping"], "errorCode": 8}})
            assert reply["ok"] == 1.0
            assert (await client.command(ping))["ok"] == 1.0
            assert (await client.command(ping))["code"] == 8
            assert (await client.command(ping))["code"] == 8
            with server.fail_point({"times": 1}, failCommands=["ping"], blockConnection=True,
                                   blockTimeMS=100):
                start = time.monotonic()
                assert (await client.command(ping))["ok"] == 1.0
                assert time.monotonic() - start >= 0.09
                assert (await client.command(ping))["ok"] == 1.0
            with server.fail_point({"times": 1}, failCommands=["ping"], blockConnection=True,
                                   blockTimeMS=60):
                expired = await client.command({**ping, "maxTimeMS": 50})
                assert (expired["code"], expired["codeName"]) == (50, "MaxTimeMSExpired")
            with server.fail_point(failCommands=["ping"], errorCode=1, appName="other"):
                assert (await client.command(ping))["ok"] == 1.0
            bad = await client.command({"configureFailPoint": "failCommand", "mode": "sometimes",
                                        "$db": "admin"})
            assert bad["ok"] == 0.0 and bad["code"] == 2
            with server.fail_point(failCommands=["hello"], closeConnection=True):
                await client.send_msg(HELLO)
                with pytest.raises(asyncio.IncompleteReadError):
                    await client.read()
        finally:
            await client.close()


async def test_roles_refuse_what_they_cannot_do() -> None:
    async with ReplicaSet(2, arbiters=1) as rs:
        secondary, arbiter = rs.members[1], rs.members[2]
        client = await RawClient.connect(secondary.port)
        try:
            write = {"insert": "c", "documents": [{"_id": 1}], "$db": "db",
                     "lsid": {"id": b"0" * 16}, "txnNumber": Int64(1)}
            reply = await client.command(write)
            assert (reply["code"], reply["errorLabels"]) == (10107, ["RetryableWriteError"])
            assert reply["codeName"] == "NotWritablePrimary"
            assert reply["topologyVersion"] == (await client.command(HELLO))["topologyVersion"]
            assert (await client.command({"find": "c", "$db": "db"}))["code"] == 13435
            read = {"find": "c", "$db": "db", "$readPreference": {"mode": "secondary"}}
            assert (await client.command(read))["ok"] == 1.0
        finally:
            await client.close()
        client = await RawClient.connect(arbiter.port)
        try:
            hello = await client.command(HELLO)
            assert hello["arbiterOnly"] is True and "lastWrite" not in hello
            assert (await client.command({"find": "c", "$db": "db"}))["code"] == 13436
        finally:
            await client.close()


async def test_elections_reconfig_and_step_down_command() -> None:
    async with ReplicaSet(3) as rs:
        first = rs.primary
        assert first is rs.members[0]
        before = first.hello_reply({"hello": 1})
        client = await RawClient.connect(first.port)
        try:
            assert (await client.command({"replSetStepDown": 60, "$db": "admin"}))["ok"] == 1.0
        finally:
            await client.close()
        assert rs.primary is rs.members[1] and first.role is Role.SECONDARY
        after = rs.members[1].hello_reply({"hello": 1})
        assert after["setVersion"] == before["setVersion"]
        assert after["electionId"] > before["electionId"]
        await rs.elect(rs.members[2])
        assert rs.primary is rs.members[2]
        await rs.reconfig(add=[MemberConfig("", priority=0)], remove=[rs.members[0]])
        hello = rs.members[1].hello_reply({"hello": 1})
        assert hello["setVersion"] == before["setVersion"] + 1
        assert hello["passives"] == [rs.members[-1].host]
        assert first.host not in hello["hosts"] and len(rs.members) == 3


async def test_users_require_authentication() -> None:
    async with Standalone(users={"bob": "pw"}) as deployment:
        client = await RawClient.connect(deployment.server.port)
        try:
            assert (await client.command({"ping": 1, "$db": "admin"}))["ok"] == 1.0
            reply = await client.command({"find": "c", "$db": "db"})
            assert (reply["code"], reply["codeName"]) == (13, "Unauthorized")
            hello = await client.command({**HELLO, "saslSupportedMechs": "admin.bob"})
            assert hello["saslSupportedMechs"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
        finally:
            await client.close()


async def test_replication_lag_shows_in_last_write() -> None:
    async with ReplicaSet(2, replication_lag_ms=5000) as rs:
        primary = rs.members[0].hello_reply({"hello": 1})["lastWrite"]["lastWriteDate"]
        secondary = rs.members[1].hello_reply({"hello": 1})["lastWrite"]["lastWriteDate"]
        assert 4.9 < (primary - secondary).total_seconds() < 5.1


async def test_close_ends_every_task_even_mid_stream() -> None:
    rs = ReplicaSet(2, election_timeout_ms=10_000)
    async with rs:
        client = await RawClient.connect(rs.members[0].port)
        waiting = await RawClient.connect(rs.members[1].port)
        stale = {"processId": ObjectId(), "counter": Int64(0)}  # answered at once
        await client.send_msg({**HELLO, "topologyVersion": stale, "maxAwaitTimeMS": 60_000},
                              flags=OpMsgFlags.EXHAUST_ALLOWED)
        assert (await client.read()).more_to_come  # then it waits up to 60 s
        current = (await waiting.command(HELLO))["topologyVersion"]
        await waiting.send_msg({**HELLO, "topologyVersion": current, "maxAwaitTimeMS": 60_000})
        await rs.members[0].partition("refuse")  # schedules an election in 10 s
        assert "stopped" in repr(rs.members[0])
    assert asyncio.all_tasks() == {asyncio.current_task()}
    with pytest.raises(asyncio.IncompleteReadError):
        await waiting.read()
    await client.close()
    await waiting.close()


async def test_client_metadata_only_in_the_first_hello() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        metadata = {"application": {"name": "app"}, "driver": {"name": "raw", "version": "0"}}
        try:
            assert (await client.command({**HELLO, "client": metadata}))["ok"] == 1.0
            assert (await client.command(HELLO))["ok"] == 1.0
            again = await client.command({**HELLO, "client": metadata})
            assert (again["ok"], again["code"]) == (0.0, 186)
        finally:
            await client.close()


async def test_load_balancer_spreads_connections_over_services() -> None:
    async with LoadBalanced(services=2) as lb:
        seen = []
        for _ in range(4):
            client = await RawClient.connect(lb.server.port)
            try:
                plain = await client.command(HELLO)
                assert "serviceId" not in plain and plain["msg"] == "isdbgrid"
                seen.append((await client.command({**HELLO, "loadBalanced": True}))[
                    "serviceId"])
            finally:
                await client.close()
        assert seen[0] == seen[2] != seen[1] == seen[3]
        assert set(seen) == set(lb.server.service_ids)


async def test_statistics_and_repr_summarise_the_state() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            await client.command({"ping": 1, "$db": "admin"}, compressor=Compressor.ZLIB)
            server.slow(5)
            with server.fail_point({"times": 3}, failCommands=["find"], errorCode=1):
                stats = server.statistics()
                assert (stats.role, stats.running, stats.connections) == (
                    Role.STANDALONE, True, 1)
                assert stats.compressed_requests == {"zlib": 1} and stats.slow_ms == 5
                assert "times remaining=3 [find]" in stats.fail_points["failCommand"]
            assert server.statistics().fail_points == {}
            assert repr(server) == (f"<SimServer standalone {server.host} running, 1 "
                                    "connections, topologyVersion 0 [slow 5ms]>")
        finally:
            await client.close()
    assert not server.statistics().running


async def test_the_package_docstring_tour_runs() -> None:
    async with ReplicaSet(members=3, arbiters=0, hidden=0, replication_lag_ms=0) as rs:
        assert rs.uri.startswith("mongodb://127.0.0.1:") and rs.uri.endswith("replicaSet=rs0")
        await rs.step_down()
        await rs.elect(rs.members[2])
        await rs.members[1].stop()
        await rs.members[1].start()
        await rs.members[1].partition("silent")
        await rs.members[1].heal()
        rs.members[1].slow(200)
        rs.members[1].send_garbage()
        rs.members[1].send_truncated()
        await rs.reconfig(add=1, remove=[rs.members[0]])
        with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=91):
            assert rs.primary is not None and "failCommand" in rs.primary.fail_points
        assert rs.primary is not None and not rs.primary.fail_points
        assert rs.group.set_version == 2 and rs.group.term == 3


async def test_slow_can_target_the_monitors_and_requests_are_counted() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            server.slow(150, commands=["hello"])
            start = time.monotonic()
            await client.command({"ping": 1, "$db": "admin"})
            assert time.monotonic() - start < 0.1
            tv = (await client.command(HELLO))["topologyVersion"]
            assert time.monotonic() - start >= 0.14
            server.slow(0)
            await client.command({**HELLO, "topologyVersion": tv, "maxAwaitTimeMS": 10})
            stats = server.statistics()
            assert stats.command_counts == {"ping": 1, "hello": 2}
            assert stats.awaited_hellos == 1
        finally:
            await client.close()
