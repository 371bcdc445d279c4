"""The simulator's acceptance test: PyMongo (an independent client) against it.

Where PyMongo and the simulator disagree, the simulator is wrong. PyMongo is a test-only peer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pymongo import (
    ASCENDING,
    AsyncMongoClient,
    CursorType,
    WriteConcern,
    compression_support,
    monitoring,
)
from pymongo.errors import (
    AutoReconnect,
    DuplicateKeyError,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    PyMongoError,
    WriteConcernError,
)

from asyncmongo.testing.deployment import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
from asyncmongo.testing.member import Role
from asyncmongo.testing.scram import UserDirectory
from tests.support.certs import KEY_PASSWORD, generate
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401
from tests.testing.raw_client import wait_until

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


class Heartbeats(monitoring.ServerHeartbeatListener):
    """Records PyMongo's heartbeat events."""

    def __init__(self) -> None:
        self.events: list[monitoring.ServerHeartbeatSucceededEvent] = []

    def started(self, event: monitoring.ServerHeartbeatStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.ServerHeartbeatSucceededEvent) -> None:
        self.events.append(event)

    def failed(self, event: monitoring.ServerHeartbeatFailedEvent) -> None:
        pass


def client_for(uri: str, **kwargs: Any) -> AsyncMongoClient[dict[str, Any]]:
    kwargs.setdefault("serverSelectionTimeoutMS", 5000)
    return AsyncMongoClient(uri, **kwargs)


async def settled(client: AsyncMongoClient[Any], rs: ReplicaSet) -> None:
    """Wait until PyMongo sees every member as it is again: closing a client while its
    monitor is still connecting to a healed member leaks PyMongo's socket (ResourceWarning)."""
    expected = {m.host: ("RSPrimary" if m is rs.primary else "RSSecondary") for m in rs.members}
    await wait_until(lambda: server_types(client) == expected)


def server_types(client: AsyncMongoClient[Any]) -> dict[str, str]:
    description = client.topology_description
    return {f"{sd.address[0]}:{sd.address[1]}": sd.server_type_name
            for sd in description.server_descriptions().values()}


async def test_discovers_replica_set_from_one_seed() -> None:
    async with ReplicaSet(3, arbiters=1, hidden=1, tags=[{"dc": "east"}, {}, {}]) as rs:
        seed = rs.members[1].host
        client = client_for(f"mongodb://{seed}/?replicaSet=rs0")
        try:
            await client.admin.command("ping")
            visible = {m.host for m in rs.members if m is not rs.members[2]}
            await wait_until(lambda: set(server_types(client)) == visible)
            types = server_types(client)
            assert types[rs.members[0].host] == "RSPrimary"
            assert types[rs.members[1].host] == "RSSecondary"
            assert types[rs.members[3].host] == "RSArbiter"
            assert client.topology_description.topology_type_name == "ReplicaSetWithPrimary"
            assert await client.primary == ("127.0.0.1", rs.members[0].port)
            assert client.nodes == {("127.0.0.1", m.port) for m in rs.members
                                    if m is not rs.members[2]}
            sd = client.topology_description.server_descriptions()[("127.0.0.1",
                                                                     rs.members[0].port)]
            assert sd.tags == {"dc": "east"}
            assert sd.replica_set_name == "rs0"
        finally:
            await client.close()


async def test_streaming_protocol_awaited_heartbeats() -> None:
    async with ReplicaSet(2) as rs:
        listener = Heartbeats()
        client = client_for(rs.uri, event_listeners=[listener], heartbeatFrequencyMS=500)
        try:
            await client.admin.command("ping")
            await wait_until(lambda: any(e.awaited for e in listener.events))
            # A step-down is visible at once through the stream (no 500 ms poll needed).
            await rs.step_down()
            new_primary = ("127.0.0.1", rs.members[1].port)
            await wait_until(lambda: client.topology_description.server_descriptions()[
                new_primary].server_type_name == "RSPrimary", within=2)
        finally:
            await client.close()


async def test_polling_without_topology_version() -> None:
    async with ReplicaSet(2, streaming=False) as rs:
        listener = Heartbeats()
        client = client_for(rs.uri, event_listeners=[listener], heartbeatFrequencyMS=500)
        try:
            await client.admin.command("ping")
            await wait_until(lambda: len(listener.events) >= 4)
            assert not any(e.awaited for e in listener.events)
        finally:
            await client.close()


async def test_step_down_loses_no_acknowledged_write() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri, heartbeatFrequencyMS=500, retryWrites=True)
        acknowledged: list[int] = []
        failures: list[BaseException] = []

        async def writer() -> None:
            for i in range(300):
                try:
                    await client.db.coll.insert_one({"_id": i})
                    acknowledged.append(i)
                except PyMongoError as exc:
                    failures.append(exc)

        async def stepper() -> None:
            for _ in range(3):
                await asyncio.sleep(0.05)
                await rs.step_down()

        try:
            await client.admin.command("ping")
            await asyncio.gather(writer(), stepper())
        finally:
            await client.close()
        reply = rs.store.handle("db", {"find": "coll", "filter": {}, "batchSize": 1000})
        ids = [doc["_id"] for doc in reply["cursor"]["firstBatch"]]
        assert len(ids) == len(set(ids))
        assert set(acknowledged) <= set(ids)
        # Retryable writes hide the step-downs: nearly every write is acknowledged.
        assert len(acknowledged) >= 290, failures[:3]
        assert rs.group.term == 4


async def test_crud_as_pymongo_expects() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri)
        try:
            coll = client.shop.items
            result = await coll.insert_one({"_id": 1, "name": "apple", "qty": 5})
            assert result.inserted_id == 1 and result.acknowledged
            many = await coll.insert_many([{"_id": i, "name": f"n{i}", "qty": i}
                                           for i in range(2, 12)])
            assert many.inserted_ids == list(range(2, 12))
            found = [d["_id"] async for d in coll.find({"qty": {"$gte": 3}})
                     .sort("qty", -1).limit(4)]
            assert found == [11, 10, 9, 8]
            batched = [d["_id"] async for d in coll.find({}, batch_size=3).sort("_id", 1)]
            assert batched == list(range(1, 12))
            updated = await coll.update_many({"qty": {"$lt": 5}}, {"$inc": {"qty": 100}})
            assert (updated.matched_count, updated.modified_count) == (3, 3)
            upsert = await coll.update_one({"_id": 99}, {"$set": {"qty": 1}}, upsert=True)
            assert upsert.upserted_id == 99
            deleted = await coll.delete_many({"qty": {"$gt": 100}})
            assert deleted.deleted_count == 3
            assert await coll.count_documents({}) == 9
            assert await coll.count_documents({"qty": {"$lt": 8}}) == 5  # 1, 5, 6, 7, 99
            pipeline: list[dict[str, Any]] = [{"$match": {"qty": {"$lt": 12}}},
                        {"$group": {"_id": None, "total": {"$sum": "$qty"}}}]
            assert [d async for d in await coll.aggregate(pipeline)] == [
                {"_id": None, "total": 1 + 5 + 5 + 6 + 7 + 8 + 9 + 10 + 11}]
            before = await coll.find_one_and_update({"_id": 5}, {"$set": {"name": "five"}})
            assert before is not None and before["name"] == "n5"
            assert await coll.distinct("name", {"_id": {"$in": [5, 6]}}) == ["five", "n6"]
            name = await coll.create_index([("name", ASCENDING)], unique=True)
            assert name == "name_1"
            with pytest.raises(DuplicateKeyError):
                await coll.insert_one({"_id": 100, "name": "five"})
            indexes = [i["name"] async for i in await coll.list_indexes()]
            assert indexes == ["_id_", "name_1"]
            assert "items" in await client.shop.list_collection_names()
            await coll.drop()
            assert await coll.count_documents({}) == 0
        finally:
            await client.close()


async def test_secondary_reads_with_read_preference() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri, readPreference="secondary")
        try:
            await client.db.c.insert_one({"x": 1})
            assert (await client.db.c.find_one({}, {"_id": 0})) == {"x": 1}
        finally:
            await client.close()


async def test_sharded_cluster_of_two_mongos() -> None:
    async with ShardedCluster(mongos=2) as cluster:
        client = client_for(cluster.uri)
        try:
            await client.db.c.insert_many([{"_id": i} for i in range(5)])
            assert await client.db.c.count_documents({}) == 5
            assert client.topology_description.topology_type_name == "Sharded"
            await wait_until(lambda: set(server_types(client).values()) == {"Mongos"}
                             and len(server_types(client)) == 2)
        finally:
            await client.close()


async def test_load_balanced() -> None:
    async with LoadBalanced(services=2) as lb:
        client = client_for(lb.uri)
        try:
            await client.db.c.insert_one({"_id": 1})
            assert await client.db.c.find_one() == {"_id": 1}
            # Concurrent operations open connections to both services (serviceIds).
            await asyncio.gather(*(client.db.c.count_documents({}) for _ in range(8)))
            assert lb.server.total_connections >= 2
            assert client.topology_description.topology_type_name == "LoadBalanced"
        finally:
            await client.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1"])
async def test_scram_authentication(mechanism: str) -> None:
    async with ReplicaSet(2, users={"alice": "s3cr3t"}) as rs:
        client = client_for(rs.uri, username="alice", password="s3cr3t",
                            authMechanism=mechanism)
        try:
            await client.db.c.insert_one({"_id": 1})
            status = await client.admin.command("connectionStatus")
            assert status["authInfo"]["authenticatedUsers"] == [{"user": "alice", "db": "admin"}]
        finally:
            await client.close()
        wrong = client_for(rs.uri, username="alice", password="nope", authMechanism=mechanism)
        try:
            with pytest.raises(OperationFailure) as info:
                await wrong.db.c.find_one()
            assert info.value.code == 18
        finally:
            await wrong.close()
        anonymous = client_for(rs.uri)
        try:
            with pytest.raises(OperationFailure) as info:
                await anonymous.db.c.find_one()
            assert info.value.code == 13
        finally:
            await anonymous.close()


#: The package PyMongo needs per compressor, and PyMongo's own check that it is importable.
_COMPRESSION_SUPPORT = {
    "zlib": ("zlib", compression_support._have_zlib),
    "zstd": ("backports.zstd", compression_support._have_zstd),
    "snappy": ("python-snappy", compression_support._have_snappy),
}


@pytest.mark.parametrize("compressor", ["zlib", "zstd", "snappy"])
async def test_compression(compressor: str) -> None:
    package, available = _COMPRESSION_SUPPORT[compressor]
    if not available():
        pytest.skip(f"PyMongo needs the {package!r} package for {compressor} (not installed)")
    async with Standalone() as server:
        client = client_for(server.uri, compressors=compressor)
        try:
            await client.db.c.insert_many([{"_id": i, "pad": "x" * 500} for i in range(20)])
            docs = [d async for d in client.db.c.find().sort("_id", 1)]
            assert [d["_id"] for d in docs] == list(range(20))
        finally:
            await client.close()
        assert server.server.compressed_requests[compressor] >= 2


async def test_fail_points_with_retryable_writes() -> None:
    async with ReplicaSet(2) as rs:
        client = client_for(rs.uri, retryWrites=True, heartbeatFrequencyMS=500)
        try:
            await client.admin.command("ping")
            with rs.fail_point({"times": 1}, failCommands=["insert"], errorCode=91):
                await client.db.c.insert_one({"_id": 1})  # retried after ShutdownInProgress
            with rs.fail_point({"times": 1}, failCommands=["insert"], closeConnection=True):
                await client.db.c.insert_one({"_id": 2})  # retried after a network error
            assert await client.db.c.count_documents({}) == 2
            await client.admin.command({
                "configureFailPoint": "failCommand", "mode": {"times": 1},
                "data": {"failCommands": ["find"], "errorCode": 2, "errmsg": "boom"}})
            with pytest.raises(OperationFailure, match="boom") as info:
                await client.db.c.find_one()
            assert info.value.code == 2
            with rs.fail_point({"times": 1}, failCommands=["insert"],
                               writeConcernError={"code": 100, "errmsg": "wc"}):
                with pytest.raises(WriteConcernError):
                    await client.db.c.insert_one({"_id": 3})
            assert await client.db.c.count_documents({}) == 3
        finally:
            await client.close()


async def test_stopped_primary_then_election() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri, heartbeatFrequencyMS=500, serverSelectionTimeoutMS=1000)
        try:
            await client.db.c.insert_one({"_id": 1})
            old = rs.primary
            assert old is not None
            await old.stop()
            with pytest.raises(AutoReconnect):
                await client.db.c.insert_one({"_id": 2}, bypass_document_validation=False)
            await rs.step_down()
            await client.db.c.insert_one({"_id": 3})
            await old.start()
            assert old.clock.counter == 0
        finally:
            await client.close()


async def test_exhaust_cursor_and_unacknowledged_writes() -> None:
    async with ReplicaSet(2) as rs:
        client = client_for(rs.uri)
        try:
            unacknowledged = client.db.get_collection("c", write_concern=WriteConcern(w=0))
            result = await unacknowledged.insert_many([{"_id": i} for i in range(25)])
            assert not result.acknowledged
            await wait_until(lambda: rs.store.handle("db", {"count": "c"})["n"] == 25)
            cursor = client.db.c.find({}, batch_size=4, cursor_type=CursorType.EXHAUST)
            assert [d["_id"] async for d in cursor.sort("_id", 1)] == list(range(25))
        finally:
            await client.close()


async def test_transactions_commit_and_abort() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri)
        try:
            await client.db.create_collection("accounts")
            async with client.start_session() as session:
                async with await session.start_transaction():
                    await client.db.accounts.insert_one({"_id": 1}, session=session)
                    assert await client.db.accounts.count_documents({}) == 0  # isolated
                assert await client.db.accounts.count_documents({}) == 1
                await session.start_transaction()
                await client.db.accounts.insert_one({"_id": 2}, session=session)
                await session.abort_transaction()
            assert await client.db.accounts.count_documents({}) == 1
        finally:
            await client.close()


async def test_tls(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    async with Standalone(tls=certs.server_context()) as server:
        client = client_for(server.uri, tlsCAFile=str(certs.ca))
        try:
            assert (await client.admin.command("ping"))["ok"] == 1.0
        finally:
            await client.close()


async def test_x509_authentication_over_tls(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    users = UserDirectory()
    users.add_x509_user("CN=client")
    tls = certs.server_context(require_client_cert=True)
    async with ReplicaSet(2, users=users, tls=tls) as rs:
        client = client_for(rs.uri, tlsCAFile=str(certs.ca), authMechanism="MONGODB-X509",
                            tlsCertificateKeyFile=str(certs.client),
                            tlsCertificateKeyFilePassword=KEY_PASSWORD)
        try:
            await client.db.c.insert_one({"_id": 1})
            status = await client.admin.command("connectionStatus")
            assert status["authInfo"]["authenticatedUsers"] == [
                {"user": "CN=client", "db": "$external"}]
        finally:
            await client.close()


async def test_failing_hello_marks_the_server_unknown() -> None:
    async with ReplicaSet(2) as rs:
        listener = Heartbeats()
        client = client_for(rs.uri, appName="monitored", heartbeatFrequencyMS=500,
                            event_listeners=[listener])
        try:
            await client.admin.command("ping")
            secondary = ("127.0.0.1", rs.members[1].port)
            await wait_until(lambda: server_types(client).get(rs.members[1].host)
                             == "RSSecondary")
            with rs.members[1].fail_point(failCommands=["hello", "isMaster"],
                                          errorCode=1234, appName="monitored"):
                rs.members[1].clock.bump()  # end the streaming wait: the next hello fails
                await wait_until(lambda: client.topology_description.server_descriptions()[
                    secondary].server_type_name == "Unknown")
            rs.members[1].clock.bump()
            await wait_until(lambda: server_types(client).get(rs.members[1].host)
                             == "RSSecondary")
        finally:
            await client.close()


async def test_reconfig_is_discovered() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri, heartbeatFrequencyMS=500)
        try:
            await client.admin.command("ping")
            await wait_until(lambda: len(server_types(client)) == 3)
            removed = rs.members[2]
            await rs.reconfig(add=1, remove=[removed])
            expected = {m.host for m in rs.members}
            assert removed.host not in expected and len(expected) == 3
            await wait_until(lambda: set(server_types(client)) == expected)
        finally:
            await client.close()


async def test_direct_connection_to_a_secondary() -> None:
    async with ReplicaSet(2) as rs:
        client = client_for(f"mongodb://{rs.members[1].host}/?directConnection=true")
        try:
            assert await client.db.c.find_one() is None  # primaryPreferred: secondary reads
            with pytest.raises(NotPrimaryError):
                await client.db.c.insert_one({"_id": 1})
        finally:
            await client.close()


async def test_automatic_election_when_the_primary_dies() -> None:
    async with ReplicaSet(3, election_timeout_ms=100) as rs:
        client = client_for(rs.uri, heartbeatFrequencyMS=500, retryWrites=True)
        try:
            await client.db.c.insert_one({"_id": 1})
            old = rs.primary
            assert old is not None
            await old.stop()
            await client.db.c.insert_one({"_id": 2})  # retried on the newly elected primary
            assert rs.primary is rs.members[1] and rs.group.term == 2
            await old.start()
            assert old.role is Role.SECONDARY
            await rs.members[1].partition("silent")
            await wait_until(lambda: rs.primary is rs.members[0])
            await rs.members[1].heal()
            await settled(client, rs)
        finally:
            await client.close()


async def test_write_concern_needs_reachable_members() -> None:
    async with ReplicaSet(3) as rs:
        client = client_for(rs.uri, heartbeatFrequencyMS=500)
        try:
            majority = client.db.get_collection(
                "c", write_concern=WriteConcern(w="majority", wtimeout=100))
            await majority.insert_one({"_id": 1})
            with pytest.raises(WriteConcernError) as info:
                await client.db.get_collection("c", write_concern=WriteConcern(w=4)).insert_one(
                    {"_id": 2})
            assert info.value.code == 100
            await rs.members[1].stop()
            await majority.insert_one({"_id": 3})  # 2 of 3 data-bearing members remain
            await rs.members[2].partition("silent")
            with pytest.raises(WriteConcernError) as info:
                await majority.insert_one({"_id": 4})
            details = info.value.details
            assert info.value.code == 64 and details is not None
            assert details["errInfo"]["wtimeout"] is True
            assert await client.db.c.count_documents({}) == 4  # applied, not acknowledged
            await rs.members[1].start()
            await rs.members[2].heal()
            await settled(client, rs)
        finally:
            await client.close()
    async with Standalone() as server:
        client = client_for(server.uri)
        try:
            with pytest.raises(OperationFailure) as refused:
                await client.db.get_collection("c", write_concern=WriteConcern(w=2)).insert_one(
                    {"_id": 1})
            assert refused.value.code == 2
        finally:
            await client.close()


async def test_network_faults_as_pymongo_sees_them() -> None:
    async with Standalone() as deployment:
        server = deployment.server
        client = client_for(deployment.uri, socketTimeoutMS=300, heartbeatFrequencyMS=500,
                            serverSelectionTimeoutMS=3000, retryReads=False)

        async def known_again() -> None:  # each error marks the server Unknown
            await wait_until(lambda: server_types(client).get(server.host) == "Standalone")

        try:
            await client.admin.command("ping")
            server.send_garbage()
            with pytest.raises(PyMongoError):  # PyMongo: ProtocolError on a bad opcode
                await client.admin.command("ping")
            await known_again()
            server.send_truncated()
            with pytest.raises(AutoReconnect):
                await client.admin.command("ping")
            await known_again()
            server.slow(600)
            with pytest.raises(NetworkTimeout):
                await client.admin.command("ping")
            server.slow(0)
            await known_again()
            await server.partition("silent")
            with pytest.raises(AutoReconnect):  # a timeout, then no server to select
                await client.admin.command("ping")
            await server.heal()
            await known_again()
            await server.partition("refuse")
            with pytest.raises(AutoReconnect, match=r"refused|Connect call failed"):
                await client.admin.command("ping")
            await server.heal()
            await known_again()
            assert (await client.admin.command("ping"))["ok"] == 1.0
        finally:
            await client.close()
