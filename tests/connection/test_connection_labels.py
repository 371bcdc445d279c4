"""CMAP backpressure: ``connect()`` labels a network error or timeout while opening the socket,
during the TLS handshake or in the hello ``SystemOverloadedError`` + ``RetryableError``, and
leaves DNS failures, certificate/hostname errors, command errors and every error of the
authentication steps unlabelled (connection-monitoring-and-pooling.md, "backpressure-enabled").
"""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest

from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.errors import AutoReconnect, MongoError, NetworkTimeout, OperationFailure
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.connection import (
    BACKPRESSURE_LABELS,
    ConnectionSettings,
    connect,
)
from asyncmongo.runtime.network import TlsSettings, is_backpressure_candidate
from asyncmongo.testing import SimServer
from asyncmongo.testing.scram import UserDirectory
from tests.support import certs
from tests.support.scripted_server import Peer, Request, ScriptedServer

pytestmark = pytest.mark.timeout(20)

SETTINGS = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0)
FAST = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=0.2)


def assert_overloaded(error: MongoError) -> None:
    assert error.error_labels >= set(BACKPRESSURE_LABELS), error.error_labels


def assert_unlabelled(error: MongoError) -> None:
    assert not error.error_labels & set(BACKPRESSURE_LABELS), error.error_labels


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> certs.CertFiles:
    return certs.generate(tmp_path_factory.mktemp("certs"))


def closed_port() -> int:
    """A loopback port nobody listens on (bound then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- opening the socket -----------------------------------------------------------------------


async def test_connection_refused_is_labelled() -> None:
    with pytest.raises(AutoReconnect) as info:
        await connect(("127.0.0.1", closed_port()), SETTINGS, id=1)
    assert_overloaded(info.value)


async def test_connect_timeout_is_labelled() -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(NetworkTimeout) as info:
        await connect(("127.0.0.1", closed_port()), SETTINGS, id=1, deadline=loop.time())
    assert_overloaded(info.value)


async def test_dns_failure_is_not_labelled(monkeypatch: pytest.MonkeyPatch) -> None:
    if type(asyncio.get_running_loop()).__module__.startswith("uvloop"):
        pytest.skip("uvloop resolves through libuv, so socket.getaddrinfo cannot be faked")

    def no_such_host(*args: object, **kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    with pytest.raises(AutoReconnect) as info:
        await connect(("db.example.invalid", 27017), SETTINGS, id=1)
    assert isinstance(info.value.__cause__, socket.gaierror)
    assert_unlabelled(info.value)


def test_classification_of_connect_causes() -> None:
    assert not is_backpressure_candidate(socket.gaierror(socket.EAI_NONAME, "unknown host"))
    assert not is_backpressure_candidate(
        ssl.SSLCertVerificationError(1, "certificate verify failed"))
    assert not is_backpressure_candidate(ssl.SSLError(1, "wrong version number"))
    assert is_backpressure_candidate(ssl.SSLEOFError(8, "EOF occurred in violation of protocol"))
    assert is_backpressure_candidate(ssl.SSLZeroReturnError(6, "TLS/SSL connection closed"))
    assert is_backpressure_candidate(ConnectionResetError(104, "Connection reset by peer"))
    assert is_backpressure_candidate(ConnectionRefusedError(111, "Connection refused"))
    assert is_backpressure_candidate(TimeoutError())
    assert is_backpressure_candidate(None)


def test_connection_module_has_no_socket_or_ssl_code() -> None:
    # DESIGN: runtime/network.py is the only module with socket/ssl code.
    import ast
    from pathlib import Path

    import asyncmongo.runtime.connection as connection

    tree = ast.parse(Path(connection.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert not imported & {"socket", "ssl"}


# -- TLS --------------------------------------------------------------------------------------


async def test_unknown_ca_is_not_labelled(files: certs.CertFiles) -> None:
    async with ScriptedServer(ssl_context=files.server_context()) as server:
        tls = TlsSettings(enabled=True, ca_file=str(files.other_ca))
        with pytest.raises(AutoReconnect, match="certificate") as info:
            await connect(server.address, ConnectionSettings(tls=tls, connect_timeout=5.0), id=1)
    assert_unlabelled(info.value)


async def test_hostname_mismatch_is_not_labelled(files: certs.CertFiles) -> None:
    context = files.server_context(files.server_wrong_host)
    async with ScriptedServer(ssl_context=context) as server:
        tls = TlsSettings(enabled=True, ca_file=str(files.ca))
        with pytest.raises(AutoReconnect, match=r"(?i)hostname|match") as info:
            await connect(server.address, ConnectionSettings(tls=tls, connect_timeout=5.0), id=1)
    assert_unlabelled(info.value)


class RawServer:
    """A TCP server that accepts and then hangs up at once or stays silent (no TLS)."""

    def __init__(self, hang_up: bool) -> None:
        self.hang_up = hang_up
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        await self.server.wait_closed()
        await asyncio.sleep(0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        if self.hang_up:
            writer.transport.abort()


@pytest.mark.parametrize(
    ("hang_up", "error"), [(True, AutoReconnect), (False, NetworkTimeout)],
    ids=["eof", "timeout"],
)
async def test_tls_handshake_io_error_is_labelled(
    files: certs.CertFiles, hang_up: bool, error: type[AutoReconnect]
) -> None:
    """The server accepts TCP, then hangs up (or never answers) during the TLS handshake."""
    tls = TlsSettings(enabled=True, ca_file=str(files.ca))
    settings = ConnectionSettings(tls=tls, connect_timeout=0.3)
    async with RawServer(hang_up) as port:
        with pytest.raises(error) as info:
            await connect(("127.0.0.1", port), settings, id=1)
    assert_overloaded(info.value)


# -- the hello --------------------------------------------------------------------------------


async def _abort_hello(request: Request, peer: Peer) -> None:
    peer.abort()


async def _ignore_hello(request: Request, peer: Peer) -> None:
    await asyncio.sleep(60)


async def _refuse_hello(request: Request, peer: Peer) -> None:
    await peer.reply(request, {"ok": 0.0, "errmsg": "shutting down", "code": 91})


async def test_hello_network_error_is_labelled() -> None:
    async with ScriptedServer(_abort_hello) as server:
        with pytest.raises(AutoReconnect) as info:
            await connect(server.address, SETTINGS, id=1)
    assert_overloaded(info.value)


async def test_hello_timeout_is_labelled() -> None:
    async with ScriptedServer(_ignore_hello) as server:
        with pytest.raises(NetworkTimeout) as info:
            await connect(server.address, FAST, id=1)
    assert_overloaded(info.value)


async def test_hello_command_error_is_not_labelled() -> None:
    async with ScriptedServer(_refuse_hello) as server:
        with pytest.raises(OperationFailure) as info:
            await connect(server.address, SETTINGS, id=1)
    assert info.value.code == 91
    assert_unlabelled(info.value)


async def test_hello_closed_by_simulator_fail_point_is_labelled() -> None:
    async with SimServer() as server:
        server.fail_point(
            {"times": 1}, failCommands=["isMaster", "hello"], closeConnection=True
        )
        with pytest.raises(AutoReconnect) as info:
            await connect(("127.0.0.1", server.port), SETTINGS, id=1)
    assert_overloaded(info.value)


# -- authentication ---------------------------------------------------------------------------


def scram_users() -> UserDirectory:
    users = UserDirectory()
    users.add_user("alice", "secret")
    return users


async def test_auth_network_error_is_not_labelled() -> None:
    """CMAP: no backpressure labels for an error in an authentication step after the hello."""
    async with SimServer(users=scram_users()) as server:
        server.fail_point({"times": 1}, failCommands=["saslContinue"], closeConnection=True)
        authenticator = CredentialAuthenticator(MongoCredential(None, "admin", "alice", "secret"))
        with pytest.raises(AutoReconnect) as info:
            await connect(("127.0.0.1", server.port), SETTINGS, id=1, authenticator=authenticator)
    assert_unlabelled(info.value)


async def test_auth_failure_is_not_labelled() -> None:
    async with SimServer(users=scram_users()) as server:
        authenticator = CredentialAuthenticator(MongoCredential(None, "admin", "alice", "wrong"))
        with pytest.raises(OperationFailure) as info:
            await connect(("127.0.0.1", server.port), SETTINGS, id=1, authenticator=authenticator)
    assert_unlabelled(info.value)
