"""SOCKS5 (proxyHost & co.) against simulated deployments through asyncmongo.testing's
SOCKS5 proxy: every connection (pools, monitors, RTT monitors, SRV-discovered hosts) goes
through it, TLS runs over the tunnel, and a proxy that is down or refuses is a clear error,
never a direct connection."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

import asyncmongo.runtime.client_runtime as client_module
from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import (
    AutoReconnect,
    ConfigurationError,
    NetworkTimeout,
    ServerSelectionTimeoutError,
)
from asyncmongo.monitoring.command import CommandEvent
from asyncmongo.runtime.connection import BACKPRESSURE_LABELS, ConnectionSettings, connect
from asyncmongo.runtime.network import ProxySettings, TlsSettings
from asyncmongo.runtime.srv import SrvAnswer
from asyncmongo.testing import ReplicaSet, Socks5Proxy, Standalone
from tests.support import certs

pytestmark = pytest.mark.timeout(30)

FAST = {"serverSelectionTimeoutMS": 1000, "connectTimeoutMS": 1000}


def direct_connections(*servers: Any) -> int:
    return sum(server.statistics().total_connections for server in servers)


async def ping(client: AsyncMongoClient[Any]) -> None:
    try:
        assert (await client.admin.command("ping"))["ok"] == 1.0
    finally:
        await client.close()


async def test_standalone_through_the_proxy_by_host_name() -> None:
    async with Socks5Proxy() as proxy, Standalone() as db:
        port = db.server.port
        uri = f"mongodb://localhost:{port}/?directConnection=true&proxyHost=127.0.0.1"
        await ping(AsyncMongoClient(uri, proxyPort=proxy.port, **FAST))
        assert proxy.connections >= 2  # the monitor's and the pool's
        assert proxy.connections == direct_connections(db.server)
        # the host name went to the proxy unresolved (ATYP 3), for every connection
        assert set(proxy.requests) == {dataclasses.replace(proxy.requests[0])}
        assert proxy.requests[0].atyp == "domain" and proxy.requests[0].host == "localhost"


async def test_every_replica_set_connection_goes_through_the_proxy() -> None:
    async with Socks5Proxy() as proxy, ReplicaSet(members=3, arbiters=0, hidden=0) as rs:
        client = AsyncMongoClient(
            rs.uri, proxyHost="127.0.0.1", proxyPort=proxy.port, heartbeatFrequencyMS=500,
            **FAST,
        )
        await client.test.c.insert_one({"x": 1})
        assert await client.test.c.count_documents({}) == 1
        await client.close()
        members = {f"{m.host}" for m in rs.members}
        assert {f"{d.host}:{d.port}" for d in proxy.requests} == members
        # monitors, RTT monitors and pooled connections: all carried, none direct
        assert proxy.connections == direct_connections(*rs.members) >= 6


async def test_srv_discovered_hosts_go_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with Socks5Proxy() as proxy, ReplicaSet(members=2, arbiters=0, hidden=0) as rs:
        seeds = tuple(("127.0.0.1", member.port) for member in rs.members)

        async def resolve(options: Any, resolver: Any = None) -> tuple[Any, SrvAnswer]:
            return dataclasses.replace(options, hosts=seeds), SrvAnswer((), 60)

        monkeypatch.setattr(client_module, "resolve_srv_options", resolve)
        monkeypatch.setattr(client_module, "DnspythonResolver", lambda: None)
        uri = f"mongodb+srv://cluster.example.com/?tls=false&replicaSet={rs.set_name}"
        await ping(AsyncMongoClient(uri, proxyHost="127.0.0.1", proxyPort=proxy.port, **FAST))
        assert proxy.connections == direct_connections(*rs.members) > 0


async def test_username_password_authentication() -> None:
    async with Socks5Proxy(username="user", password="p4ssw0rd") as proxy, Standalone() as db:
        await ping(AsyncMongoClient(
            db.uri, proxyHost="127.0.0.1", proxyPort=proxy.port,
            proxyUsername="user", proxyPassword="p4ssw0rd", **FAST,
        ))
        assert proxy.connections > 0 and proxy.refused == 0


async def test_bad_credentials_are_a_clear_error() -> None:
    async with Socks5Proxy(username="user", password="p4ssw0rd") as proxy, Standalone() as db:
        client = AsyncMongoClient(
            db.uri, proxyHost="127.0.0.1", proxyPort=proxy.port,
            proxyUsername="user", proxyPassword="wrong", **FAST,
        )
        with pytest.raises(ServerSelectionTimeoutError) as info:
            await ping(client)
        message = str(info.value)
        assert f"SOCKS5 proxy 127.0.0.1:{proxy.port}" in message
        assert "refused username/password authentication for user 'user'" in message
        assert "wrong" not in message
        assert direct_connections(db.server) == 0


async def test_proxy_needing_credentials_without_them() -> None:
    async with Socks5Proxy(username="user", password="p4ssw0rd") as proxy, Standalone() as db:
        client = AsyncMongoClient(db.uri, proxyHost="127.0.0.1", proxyPort=proxy.port, **FAST)
        with pytest.raises(ServerSelectionTimeoutError, match="proxyUsername and proxyPassword"):
            await ping(client)
        assert direct_connections(db.server) == 0


async def test_proxy_down_is_a_selection_timeout_naming_the_proxy() -> None:
    async with Socks5Proxy() as proxy, Standalone() as db:
        port = proxy.port
    async with Standalone() as db:
        client = AsyncMongoClient(db.uri, proxyHost="127.0.0.1", proxyPort=port, **FAST)
        with pytest.raises(ServerSelectionTimeoutError, match=f"SOCKS5 proxy 127.0.0.1:{port}"):
            await ping(client)
        assert direct_connections(db.server) == 0  # no silent direct connection


async def test_proxy_cannot_reach_the_server() -> None:
    async with Socks5Proxy() as proxy, Standalone() as db:
        port = db.server.port
    async with proxy:
        client = AsyncMongoClient(
            f"mongodb://127.0.0.1:{port}", proxyHost="127.0.0.1", proxyPort=proxy.port, **FAST
        )
        with pytest.raises(ServerSelectionTimeoutError, match="connection refused"):
            await ping(client)


async def test_proxy_failures_carry_no_backpressure_labels() -> None:
    async with Socks5Proxy(username="u", password="p") as proxy, Standalone() as db:
        for settings in (
            ConnectionSettings(proxy=ProxySettings("127.0.0.1", proxy.port), connect_timeout=2),
            ConnectionSettings(proxy=ProxySettings("127.0.0.1", 1), connect_timeout=2),
        ):
            with pytest.raises(AutoReconnect) as info:
                await connect(("127.0.0.1", db.server.port), settings, id=1)
            assert "SOCKS5 proxy" in str(info.value)
            assert not set(BACKPRESSURE_LABELS) & set(info.value._error_labels)


async def test_command_events_name_the_server_not_the_proxy() -> None:
    events: list[Any] = []
    async with Socks5Proxy() as proxy, Standalone() as db:
        client = AsyncMongoClient(
            db.uri, proxyHost="127.0.0.1", proxyPort=proxy.port,
            event_listeners=[events.append], **FAST,
        )
        await ping(client)
        commands = [e for e in events if isinstance(e, CommandEvent)]
        assert commands
        assert {e.connection_id for e in commands} == {("127.0.0.1", db.server.port)}
        assert proxy.connections > 0


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> certs.CertFiles:
    return certs.generate(tmp_path_factory.mktemp("certs"))


async def test_tls_over_the_tunnel(files: certs.CertFiles) -> None:
    async with Socks5Proxy() as proxy, Standalone(tls=files.server_context()) as db:
        uri = f"mongodb://localhost:{db.server.port}/?tls=true&tlsCAFile={files.ca}"
        await ping(AsyncMongoClient(uri, proxyHost="127.0.0.1", proxyPort=proxy.port, **FAST))
        assert proxy.connections > 0


async def test_tls_checks_the_server_host_not_the_proxy(files: certs.CertFiles) -> None:
    context = files.server_context(files.server_wrong_host)
    async with Socks5Proxy() as proxy, Standalone(tls=context) as db:
        uri = f"mongodb://localhost:{db.server.port}/?tls=true&tlsCAFile={files.ca}"
        client = AsyncMongoClient(uri, proxyHost="127.0.0.1", proxyPort=proxy.port, **FAST)
        with pytest.raises(ServerSelectionTimeoutError, match=r"(?i)hostname|match"):
            await ping(client)
        assert proxy.connections > 0


async def test_tls_settings_reach_the_tunnel_connection(files: certs.CertFiles) -> None:
    async with Socks5Proxy() as proxy, Standalone(tls=files.server_context()) as db:
        settings = ConnectionSettings(
            tls=TlsSettings(enabled=True, ca_file=str(files.ca)),
            proxy=ProxySettings("127.0.0.1", proxy.port),
        )
        conn = await connect(("localhost", db.server.port), settings, id=1)
        try:
            assert conn._transport.get_extra_info("ssl_object") is not None
            assert conn.address == ("localhost", db.server.port)
        finally:
            conn.close()


@pytest.mark.parametrize(
    ("uri", "error"),
    [
        ("mongodb://h/?proxyPort=1080", "proxyPort requires proxyHost"),
        ("mongodb://h/?proxyHost=p&proxyUsername=u", "together"),
        ("mongodb://%2Ftmp%2Fm.sock/?proxyHost=p", "Unix domain socket"),
        (f"mongodb://h/?proxyHost=p&proxyUsername={'u' * 256}&proxyPassword=p", "255 bytes"),
    ],
)
def test_invalid_proxy_options(uri: str, error: str) -> None:
    with pytest.raises(ConfigurationError, match=error):
        AsyncMongoClient(uri)


def test_zero_length_credentials_are_ignored() -> None:
    client = AsyncMongoClient("mongodb://h/?proxyHost=p&proxyUsername=&proxyPassword=")
    settings = ConnectionSettings.from_client_options(client.options)
    assert settings.proxy == ProxySettings("p", 1080)
    assert "secret" not in repr(ProxySettings("p", 1, "u", "secret"))


class SilentProxy:
    """Accepts connections and never answers (a hung proxy)."""

    def __init__(self) -> None:
        self.accepted: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.first = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> SilentProxy:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for _, writer in self.accepted:
            writer.close()
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted.append((reader, writer))
        self.first.set()


async def test_a_hung_proxy_times_out_naming_the_proxy() -> None:
    async with SilentProxy() as proxy:
        settings = ConnectionSettings(
            proxy=ProxySettings("127.0.0.1", proxy.port), connect_timeout=0.2
        )
        with pytest.raises(NetworkTimeout, match=rf"SOCKS5 proxy 127.0.0.1:{proxy.port}: timed"):
            await connect(("db.example", 27017), settings, id=1)
        assert len(proxy.accepted) == 1


async def test_a_hung_proxy_fails_server_selection() -> None:
    async with SilentProxy() as proxy:
        client = AsyncMongoClient(
            "mongodb://db.example:27017", proxyHost="127.0.0.1", proxyPort=proxy.port,
            serverSelectionTimeoutMS=600, connectTimeoutMS=200,
        )
        with pytest.raises(ServerSelectionTimeoutError, match=r"SOCKS5 proxy.*timed out"):
            await ping(client)


async def test_cancelled_during_the_proxy_handshake_leaves_nothing_open() -> None:
    async with SilentProxy() as proxy:
        settings = ConnectionSettings(proxy=ProxySettings("127.0.0.1", proxy.port))
        task = asyncio.create_task(connect(("db.example", 27017), settings, id=1))
        await asyncio.wait_for(proxy.first.wait(), 2)
        reader, _ = proxy.accepted[0]
        greeting = await reader.readexactly(3)
        assert greeting == b"\x05\x01\x00"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the socket to the proxy was closed: the proxy sees EOF
        assert await asyncio.wait_for(reader.read(), 2) == b""


async def test_unix_socket_hosts_are_not_connected_around_the_proxy() -> None:
    settings = ConnectionSettings(proxy=ProxySettings("127.0.0.1", 1))
    with pytest.raises(ConfigurationError, match="Unix domain socket"):
        await connect(("/tmp/mongodb-27017.sock", None), settings, id=1)


async def test_an_unresolvable_proxy_host_says_so() -> None:
    settings = ConnectionSettings(proxy=ProxySettings("proxy.invalid", 1080), connect_timeout=5)
    with pytest.raises(AutoReconnect, match=r"SOCKS5 proxy proxy.invalid:1080: .*resolve") as info:
        await connect(("db.example", 27017), settings, id=1)
    assert not set(BACKPRESSURE_LABELS) & set(info.value._error_labels)


async def test_closing_the_proxy_cuts_the_tunnels() -> None:
    async with Standalone() as db:
        proxy = Socks5Proxy()
        await proxy.start()
        client = AsyncMongoClient(
            db.uri, proxyHost="127.0.0.1", proxyPort=proxy.port, heartbeatFrequencyMS=500, **FAST
        )
        try:
            await client.admin.command("ping")
            assert "carried" in repr(proxy) and "no auth" in repr(proxy)
            await proxy.close()
            with pytest.raises(AutoReconnect):
                await client.admin.command("ping")
        finally:
            await client.close()
            await proxy.close()
