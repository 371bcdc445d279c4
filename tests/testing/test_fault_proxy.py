"""Network faults on cue (asyncmongo.testing.proxy) and what asyncmongo's client does under
each: typed errors, the broken connection discarded, recovery once the fault heals.

Timing is event-driven where it can be and bounded generously where it cannot (the machines
running these are shared): a fault that should cost ~N ms is asserted at >= N and well below
the operation's timeoutMS.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import AutoReconnect, ConnectionFailure, NetworkTimeout, ProtocolError
from asyncmongo.testing import ReplicaSet, Role, Standalone
from asyncmongo.testing.proxy import FaultKind, FaultProxy, Scope
from tests.support.certs import generate
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def standalone() -> AsyncIterator[Standalone]:
    async with Standalone(fault_proxy=True) as deployment:
        yield deployment


@pytest.fixture
async def client(standalone: Standalone) -> AsyncIterator[AsyncMongoClient]:
    # retryReads/Writes off: each fault's own error surfaces, not a retry's success.
    client = AsyncMongoClient(standalone.uri, timeoutMS=3000, retryReads=False,
                              retryWrites=False)
    await client.db.c.insert_one({"_id": 0})
    try:
        yield client
    finally:
        await client.close()


def proxy_of(deployment: Standalone) -> FaultProxy:
    proxy = deployment.server.proxy
    assert proxy is not None
    return proxy


async def test_the_member_names_itself_by_its_proxy(standalone: Standalone) -> None:
    proxy = proxy_of(standalone)
    assert standalone.server.host == f"127.0.0.1:{proxy.port}"
    assert proxy.port != standalone.server.port
    assert f":{proxy.port}/" in standalone.uri


async def test_latency_with_jitter_delays_each_message(standalone: Standalone,
                                                       client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    async with proxy.latency(150, jitter_ms=50) as fault:
        assert fault.kind is FaultKind.LATENCY
        start = time.monotonic()
        assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}
        elapsed = time.monotonic() - start
    assert 0.3 <= elapsed < 2.5  # request and reply each 150-200 ms late
    assert proxy.faults == []


async def test_bandwidth_limit_slows_a_large_reply(standalone: Standalone,
                                                   client: AsyncMongoClient) -> None:
    await client.db.big.insert_one({"_id": 1, "blob": "x" * 40_000})
    async with proxy_of(standalone).bandwidth(100_000):
        start = time.monotonic()
        document = await client.db.big.find_one({"_id": 1})
        elapsed = time.monotonic() - start
    assert document is not None and len(document["blob"]) == 40_000
    assert elapsed >= 0.3  # 40 kB at 100 kB/s


async def test_blackhole_times_out_and_discards_the_connection(
        standalone: Standalone, client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    before = proxy.total_links
    async with proxy.blackhole(scope=Scope.EXISTING):
        start = time.monotonic()
        with pytest.raises(NetworkTimeout):
            await client.db.c.find_one({})
        assert time.monotonic() - start < 3.0 + 1.0
    # Healed: the next operation works, on a new connection (the timed-out one is gone).
    assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}
    assert proxy.total_links > before


async def test_reset_now_breaks_open_connections(standalone: Standalone,
                                                 client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    opened = proxy.total_links
    proxy.reset(scope=Scope.EXISTING)
    with pytest.raises(AutoReconnect):
        await client.db.c.find_one({})
    await proxy.heal()
    assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}
    assert proxy.total_links > opened


async def test_reset_after_n_bytes_cuts_new_connections(standalone: Standalone,
                                                        client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    await client.db.big.insert_one({"_id": 1, "blob": "y" * 20_000})
    proxy.reset(scope=Scope.EXISTING)  # clear the pool's connection
    with pytest.raises(AutoReconnect):
        await client.db.c.find_one({})
    async with proxy.reset(after_bytes=3_000, scope=Scope.NEW):
        with pytest.raises(AutoReconnect):
            await client.db.big.find_one({"_id": 1})  # the 20 kB reply is cut short
    assert (await client.db.big.find_one({"_id": 1}) or {}).get("_id") == 1


async def test_retryable_write_survives_a_reset(standalone: Standalone) -> None:
    # A standalone does not support retryable writes; a replica set does.
    async with ReplicaSet(1, fault_proxy=True) as rs:
        client = AsyncMongoClient(rs.uri, timeoutMS=5000)
        try:
            await client.db.c.insert_one({"_id": 0})
            proxy = rs.members[0].proxy
            assert proxy is not None
            proxy.reset(scope=Scope.EXISTING)
            await client.db.c.insert_one({"_id": 1})  # retried once on a new connection
            assert rs.store.handle("db", {"count": "c"})["n"] == 2
        finally:
            await client.close()


async def test_truncated_reply_closes_the_connection(standalone: Standalone,
                                                     client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    links = proxy.links
    async with proxy.truncate(count=None, scope=Scope.EXISTING):
        with pytest.raises(AutoReconnect):
            await client.db.c.find_one({})
    assert any(link.closed for link in links)  # the pooled connection, at least
    assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}


async def test_corrupted_reply_is_a_protocol_error(standalone: Standalone,
                                                   client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    async with proxy.corrupt(count=None, scope=Scope.EXISTING):
        with pytest.raises((ProtocolError, ConnectionFailure)):
            await client.db.c.find_one({})
    # The corrupt connection was discarded; a fresh one works.
    assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}


async def test_slow_drip_delivers_the_whole_reply(standalone: Standalone,
                                                  client: AsyncMongoClient) -> None:
    async with proxy_of(standalone).drip(chunk=16, interval_ms=2):
        start = time.monotonic()
        assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}
        assert time.monotonic() - start >= 0.01


async def test_refuse_new_connections(standalone: Standalone) -> None:
    proxy = proxy_of(standalone)
    async with proxy.refuse():
        with pytest.raises(ConnectionRefusedError):
            _, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            writer.close()  # pragma: no cover - the connect fails
        client = AsyncMongoClient(standalone.uri, serverSelectionTimeoutMS=500)
        try:
            with pytest.raises(ConnectionFailure):  # ServerSelectionTimeoutError
                await client.db.c.find_one({})
        finally:
            await client.close()
    _reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.close()
    await writer.wait_closed()


async def test_partition_driver_and_member_then_heal(standalone: Standalone,
                                                     client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    async with proxy.partition():
        with pytest.raises(NetworkTimeout):
            await client.db.c.find_one({})
    assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}


async def test_faults_aim_at_chosen_connections(standalone: Standalone,
                                                client: AsyncMongoClient) -> None:
    proxy = proxy_of(standalone)
    victims = proxy.links[:1]
    fault = proxy.reset(connections=victims)
    assert victims[0].closed
    assert all(link.closed is False for link in proxy.links)
    await fault.heal()
    assert repr(proxy).startswith("<FaultProxy 127.0.0.1:")


async def test_a_stopped_member_is_refused_through_its_proxy(standalone: Standalone) -> None:
    proxy = proxy_of(standalone)
    await standalone.server.stop()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", proxy.port)
    await standalone.server.start()
    assert standalone.server.host == f"127.0.0.1:{proxy.port}"
    _reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.close()
    await writer.wait_closed()


async def test_member_partition_elects_a_new_primary() -> None:
    async with ReplicaSet(3, fault_proxy=True) as rs:
        client = AsyncMongoClient(rs.uri, timeoutMS=10_000)
        try:
            await client.db.c.insert_one({"_id": "before"})
            old = rs.primary
            assert old is not None
            async with await rs.partition_members([old]) as partition:
                assert partition.majority == "rest"
                assert rs.primary is not None and rs.primary is not old
                assert old.role is Role.SECONDARY
                # The driver finds the new primary through its monitors and writes there.
                await client.db.c.insert_one({"_id": "during"})
            assert rs.primary is not old  # healing keeps the new primary
            assert rs.store.handle("db", {"count": "c"})["n"] == 2
        finally:
            await client.close()


async def test_member_partition_without_a_majority_leaves_no_primary() -> None:
    async with ReplicaSet(2, fault_proxy=True) as rs:
        partition = await rs.partition_members([rs.members[0]])
        assert partition.majority is None
        assert rs.primary is None
        await partition.heal()
        assert rs.primary is not None


async def test_faults_behind_tls_hit_raw_records(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    async with Standalone(tls=certs.server_context(), fault_proxy=True) as deployment:
        proxy = proxy_of(deployment)
        assert proxy.framed is False
        client = AsyncMongoClient(deployment.uri, tlsCAFile=str(certs.ca), timeoutMS=3000,
                                  retryReads=False)
        try:
            await client.db.c.insert_one({"_id": 0})
            async with proxy.latency(100):
                assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}
            async with proxy.corrupt(count=None, scope=Scope.EXISTING):
                with pytest.raises(AutoReconnect):  # the record's MAC fails
                    await client.db.c.find_one({})
            assert await client.db.c.find_one({"_id": 0}) == {"_id": 0}
        finally:
            await client.close()


async def test_timeout_ms_bounds_a_new_connection_into_a_blackhole(
        standalone: Standalone) -> None:
    proxy = proxy_of(standalone)
    # connectTimeoutMS above timeoutMS (and below its 20 s default, to keep the test short).
    client = AsyncMongoClient(standalone.uri, timeoutMS=3000, connectTimeoutMS=6000,
                              retryReads=False)
    try:
        await client.db.c.find_one({})
        async with proxy.blackhole(scope=Scope.NEW):
            # The pool holds one connection (and the monitors theirs): two of three
            # concurrent operations open new ones, into the blackhole.
            start = time.monotonic()
            results = await asyncio.gather(*(client.db.c.find_one({}) for _ in range(3)),
                                           return_exceptions=True)
            elapsed = time.monotonic() - start
    finally:
        await client.close()
    timeouts = [result for result in results if isinstance(result, NetworkTimeout)]
    assert timeouts, results
    assert any("phase: connect" in str(error) for error in timeouts), timeouts
    assert elapsed < 3.0 + 1.0, f"took {elapsed:.1f} s with timeoutMS=3000"


async def test_fixture_proxied_replica_set(mongo_proxied_replica_set: ReplicaSet) -> None:
    rs = mongo_proxied_replica_set
    assert len(rs.proxies) == 3
    assert [m.host for m in rs.members] == [f"127.0.0.1:{p.port}" for p in rs.proxies]
    client = AsyncMongoClient(rs.uri, timeoutMS=5000)
    try:
        await client.db.c.insert_one({"_id": 1})
        assert all(proxy.total_links > 0 for proxy in rs.proxies)  # monitors connect through
        await rs.heal_network()
    finally:
        await client.close()


async def test_fixture_proxied_standalone(mongo_proxied_standalone: Standalone) -> None:
    assert mongo_proxied_standalone.server.proxy is not None


async def test_a_fixed_port_is_the_proxys() -> None:
    probe = FaultProxy()
    await probe.start(1)
    port = probe.port  # a free port, released again
    await probe.close()
    async with Standalone(port=port, fault_proxy=True) as deployment:
        assert proxy_of(deployment).port == port
        assert deployment.server.host == f"127.0.0.1:{port}"
        assert deployment.server.port != port


async def test_scopes_split_connections_by_when_they_opened(standalone: Standalone) -> None:
    proxy = proxy_of(standalone)
    old = await RawClient.connect(proxy.port)
    try:
        await old.command({"ping": 1, "$db": "admin"})
        async with proxy.latency(300, scope=Scope.NEW):
            new = await RawClient.connect(proxy.port)
            try:
                start = time.monotonic()
                await old.command({"ping": 1, "$db": "admin"})
                assert time.monotonic() - start < 0.3  # opened before: untouched
                start = time.monotonic()
                await new.command({"ping": 1, "$db": "admin"})
                assert time.monotonic() - start >= 0.6  # opened after: both ways late
                async with proxy.blackhole(scope=Scope.EXISTING):
                    newest = await RawClient.connect(proxy.port)
                    try:
                        assert (await newest.command({"ping": 1, "$db": "admin"}))["ok"] == 1
                    finally:
                        await newest.close()
            finally:
                await new.close()
    finally:
        await old.close()


async def test_reset_after_n_bytes_is_exact(standalone: Standalone) -> None:
    proxy = proxy_of(standalone)
    client = await RawClient.connect(proxy.port)
    try:
        await client.command({"ping": 1, "$db": "admin"})
        link = proxy.links[0]
        moved = sum(link.moved.values())
        proxy.reset(after_bytes=10, connections=[link])
        await client.send_msg({"ping": 1, "$db": "admin"})
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await client.read()
        assert link.closed and sum(link.moved.values()) == moved + 10
    finally:
        await client.close()


async def test_no_election_picks_a_member_cut_off_from_the_majority() -> None:
    async with ReplicaSet(3) as rs:
        old = rs.primary
        assert old is not None
        async with await rs.partition_members([old]) as partition:
            assert partition.cut_off() == {old.host}
            for _ in range(3):
                winner = await rs.step_down()
                assert winner is not None and winner is not old
        assert partition.cut_off() == set()
        await rs.elect(old)  # healed: it may win again
        assert rs.primary is old
