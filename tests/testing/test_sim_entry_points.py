"""The command line (``python -m asyncmongo.testing``) and the pytest plugin's fixtures."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest
from pymongo import AsyncMongoClient

from asyncmongo.testing import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
from asyncmongo.testing.__main__ import build, parse_args
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(30), *PYMONGO_PEER_MARKS]


def test_arguments_choose_the_deployment() -> None:
    assert isinstance(build(parse_args([])), Standalone)
    replica_set = build(parse_args(["replset", "5", "--user", "ann:pw"]))
    assert isinstance(replica_set, ReplicaSet) and len(replica_set._plan) == 5
    assert replica_set.users.get("admin", "ann") is not None
    sharded = build(parse_args(["sharded", "3"]))
    assert isinstance(sharded, ShardedCluster) and len(sharded.mongos) == 3
    assert isinstance(build(parse_args(["lb"])), LoadBalanced)
    with pytest.raises(SystemExit):
        parse_args(["cluster"])


async def test_command_line_prints_a_usable_uri() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "asyncmongo.testing", "replset", "2",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(20):
            uri = (await process.stdout.readline()).decode().strip()
        assert uri.startswith("mongodb://127.0.0.1:") and uri.endswith("replicaSet=rs0")
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
            uri, serverSelectionTimeoutMS=5000)
        try:
            await client.db.c.insert_one({"_id": 1})
            assert await client.db.c.find_one() == {"_id": 1}
        finally:
            await client.close()
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)  # Ctrl-C
        _, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()[-500:]
    assert b"Traceback" not in stderr


async def test_fixture_standalone(mongo_standalone: Standalone) -> None:
    assert mongo_standalone.server.running
    assert mongo_standalone.uri == f"mongodb://{mongo_standalone.server.host}/"


async def test_fixture_replica_set(mongo_replica_set: ReplicaSet) -> None:
    assert len(mongo_replica_set.members) == 3
    assert mongo_replica_set.primary is mongo_replica_set.members[0]


async def test_fixture_sharded(mongo_sharded: ShardedCluster) -> None:
    assert len(mongo_sharded.mongos) == 2


async def test_fixture_load_balanced(mongo_load_balanced: LoadBalanced) -> None:
    assert "loadBalanced=true" in mongo_load_balanced.uri
