"""The connection runtime against the scripted server: handshake, commands, compression,
exhaust, malformed replies, peers that close mid-reply, timeouts."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import bson as pybson
import pytest

from asyncmongo.bson import ObjectId
from asyncmongo.bson.codec import encode
from asyncmongo.core.wire.compression import CompressionSettings, Compressor
from asyncmongo.core.wire.handshake import DriverInfo, HostInfo, ServerApi
from asyncmongo.core.wire.op_msg import DocumentSequence
from asyncmongo.errors import (
    AutoReconnect,
    ConfigurationError,
    DocumentTooLarge,
    InvalidOperation,
    NetworkTimeout,
    OperationFailure,
    ProtocolError,
)
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect
from tests.support.scripted_server import Peer, Request, ScriptedServer, op_msg

HOST = HostInfo("Linux", "Linux", "x86_64", "6.1", "CPython 3.11", {})
SETTINGS = ConnectionSettings(host=HOST, connect_timeout=5.0)

pytestmark = pytest.mark.timeout(10)


async def open_conn(server: ScriptedServer, settings: ConnectionSettings = SETTINGS) -> Connection:
    return await connect(server.address, settings, id=1)


async def test_handshake_and_ping() -> None:
    async with ScriptedServer() as server:
        conn = await open_conn(server)
        try:
            hello = server.requests[0]
            assert hello.name == "isMaster" and hello.command["helloOk"] is True
            assert hello.db == "admin" and hello.command["backpressure"] == "2"
            assert hello.command["client"]["driver"]["name"] == "asyncmongo"
            assert hello.command["compression"] == []
            assert conn.max_wire_version == 21 and conn.hello["helloOk"] is True
            assert conn.max_message_size_bytes == 48_000_000
            assert await conn.command("admin", {"ping": 1}) == {"ok": 1.0}
            assert server.requests[1].command == {"ping": 1, "$db": "admin"}
            assert "idle" in repr(conn) and not conn.is_closed
        finally:
            await conn.aclose()
        assert conn.is_closed and "closed" in repr(conn)


async def test_app_name_and_wrapping_library() -> None:
    settings = ConnectionSettings(
        host=HOST, app_name="myapp", driver_info=(DriverInfo("lib", "1.0"),)
    )
    async with ScriptedServer() as server:
        conn = await open_conn(server, settings)
        conn.close()
        client = server.requests[0].command["client"]
        assert client["application"] == {"name": "myapp"}
        assert client["driver"]["name"] == "asyncmongo|lib"


async def test_server_api_uses_hello_and_goes_on_every_command() -> None:
    settings = ConnectionSettings(host=HOST, server_api=ServerApi("1", strict=True))
    async with ScriptedServer() as server:
        conn = await open_conn(server, settings)
        await conn.command("db", {"getMore": 1, "collection": "c"})
        conn.close()
        hello, get_more = server.requests
        assert hello.name == "hello" and "helloOk" not in hello.command
        for request in (hello, get_more):
            assert request.command["apiVersion"] == "1" and request.command["apiStrict"] is True
            assert "apiDeprecationErrors" not in request.command


async def test_arbitrary_sasl_mechanism_accepted() -> None:
    # handshake prose test 2: saslSupportedMechs with an unknown mechanism is not an error
    async with ScriptedServer(hello_extra={"saslSupportedMechs": ["SCRAM-SHA-256", "BOGUS"]}) as s:
        conn = await open_conn(s)
        assert conn.hello["saslSupportedMechs"][-1] == "BOGUS"
        conn.close()


@pytest.mark.parametrize(
    "environ",
    [
        {"AWS_EXECUTION_ENV": "AWS_Lambda_java8", "AWS_REGION": "us-east-2"},
        {"VERCEL": "1"},
        {"AWS_EXECUTION_ENV": "EC2"},
    ],
)
async def test_handshake_succeeds_in_faas_environments(environ: dict[str, str]) -> None:
    host = HostInfo("Linux", environ=environ)
    async with ScriptedServer() as server:
        conn = await open_conn(server, ConnectionSettings(host=host))
        assert await conn.command("admin", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_check_raises_operation_failure() -> None:
    async with ScriptedServer() as server:
        conn = await open_conn(server)
        reply = await conn.command("db", {"nope": 1})
        assert reply["ok"] == 0.0 and reply["code"] == 59
        with pytest.raises(OperationFailure) as info:
            await conn.command("db", {"nope": 1}, check=True)
        assert info.value.code == 59 and not conn.is_closed
        conn.close()


async def test_failed_handshake_closes_the_socket() -> None:
    async def refuse(request: Request, peer: Peer) -> None:
        await peer.reply(request, {"ok": 0.0, "errmsg": "go away", "code": 18})

    async with ScriptedServer(refuse) as server:
        with pytest.raises(OperationFailure, match="go away"):
            await open_conn(server)


async def test_document_sequences_are_sent() -> None:
    docs = [encode({"_id": i}) for i in range(3)]
    async with ScriptedServer() as server:
        conn = await open_conn(server)
        reply = await conn.command(
            "db", {"echo": "c"}, sequences=[DocumentSequence("documents", docs)]
        )
        assert reply["sequences"] == {"documents": [{"_id": 0}, {"_id": 1}, {"_id": 2}]}
        conn.close()


async def test_reply_sequences_are_decoded() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name != "docs":
            return await peer.default(request)
        body = pybson.encode({"ok": 1})
        doc = pybson.encode({"a": 1})
        seq = b"\x01" + struct.pack("<i", 4 + 2 + len(doc)) + b"d\x00" + doc
        payload = struct.pack("<I", 0) + b"\x00" + body + seq
        peer.send_raw(
            struct.pack("<iiii", 16 + len(payload), 7, request.request_id, 2013) + payload
        )

    async with ScriptedServer(handler) as server:
        conn = await open_conn(server)
        assert await conn.command("db", {"docs": 1}) == {"ok": 1, "d": [{"a": 1}]}
        conn.close()


@pytest.mark.parametrize("compressor", ["snappy", "zlib", "zstd"])
async def test_compression_negotiated_and_used(compressor: str) -> None:
    settings = ConnectionSettings(
        host=HOST, compression=CompressionSettings((compressor, "zlib"), zlib_compression_level=9)
    )
    async with ScriptedServer(compressors=[compressor]) as server:
        conn = await open_conn(server, settings)
        assert conn.compressor is Compressor.from_name(compressor)
        big = "x" * 10_000
        reply = await conn.command("db", {"echo": big})
        assert reply["command"]["echo"] == big
        await conn.command("db", {"saslStart": 1})
        conn.close()
        hello, echo, sasl = server.requests
        assert hello.compressor_id is None  # hello is never compressed
        assert hello.command["compression"] == [compressor, "zlib"]
        assert echo.compressor_id == Compressor.from_name(compressor)
        assert sasl.compressor_id is None


async def test_no_common_compressor_is_not_an_error() -> None:
    settings = ConnectionSettings(host=HOST, compression=CompressionSettings(("zstd",)))
    async with ScriptedServer(compressors=["snappy"]) as server:
        conn = await open_conn(server, settings)
        assert conn.compressor is None
        await conn.command("db", {"ping": 1})
        conn.close()
        assert server.requests[1].compressor_id is None


async def test_compressed_reply_to_uncompressed_request() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name == "ping":
            await peer.reply(request, {"ok": 1.0}, compressor_id=3)
        else:
            await peer.default(request)

    async with ScriptedServer(handler) as server:
        conn = await open_conn(server)
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_exhaust_stream() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name != "stream":
            return await peer.default(request)
        assert request.flags & (1 << 16)
        rid = await peer.reply(request, {"n": 0, "ok": 1}, flags=2)
        rid = await peer.reply(request, {"n": 1, "ok": 1}, flags=2, response_to=rid)
        await peer.reply(request, {"n": 2, "ok": 1}, response_to=rid)

    async with ScriptedServer(handler) as server:
        conn = await open_conn(server)
        first = await conn.command("db", {"stream": 1}, exhaust_allowed=True)
        assert first["n"] == 0 and conn.more_to_come
        with pytest.raises(InvalidOperation):
            await conn.command("db", {"ping": 1})
        assert (await conn.read_more_to_come())["n"] == 1
        assert (await conn.read_more_to_come())["n"] == 2
        assert not conn.more_to_come
        with pytest.raises(InvalidOperation):
            await conn.read_more_to_come()
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_unacknowledged_write_reads_nothing() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name != "insert":
            await peer.default(request)

    async with ScriptedServer(handler) as server:
        conn = await open_conn(server)
        assert await conn.command("db", {"insert": "c"}, unacknowledged=True) == {}
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()
        assert server.requests[1].flags & 2


GARBAGE = {
    "garbage bytes": lambda rid: b"\xff" * 40,
    "wrong responseTo": lambda rid: op_msg({"ok": 1}, rid + 1000),
    "bad bson": lambda rid: (
        struct.pack("<iiii", 16 + 4 + 1 + 8, 5, rid, 2013)
        + b"\x00\x00\x00\x00\x00"
        + struct.pack("<i", 8)
        + b"\x10a\x00\x00"
    ),
    "unknown opcode": lambda rid: struct.pack("<iiii", 20, 5, rid, 2004) + b"\x00" * 4,
    "invalid bson value": lambda rid: (
        struct.pack("<iiii", 16 + 4 + 1 + 12, 5, rid, 2013)
        + b"\x00" * 5
        + struct.pack("<i", 12)
        + b"\x02a\x00\xff\xff\xff\x7f\x00"
    ),
}


@pytest.mark.parametrize("make", GARBAGE.values(), ids=GARBAGE.keys())
async def test_malformed_reply_closes_that_connection(make: Any) -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name == "bad":
            peer.send_raw(make(request.request_id))
        else:
            await peer.default(request)

    async with ScriptedServer(handler) as server:
        bad = await open_conn(server)
        good = await connect(server.address, SETTINGS, id=2)
        with pytest.raises(ProtocolError):
            await bad.command("db", {"bad": 1})
        assert bad.is_closed
        with pytest.raises(AutoReconnect):
            await bad.command("db", {"ping": 1})
        assert await good.command("db", {"ping": 1}) == {"ok": 1.0}
        good.close()


@pytest.mark.parametrize("cut", [3, 16, 30])
async def test_server_closes_mid_reply(cut: int) -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name == "ping":
            peer.send_raw(op_msg({"ok": 1.0, "pad": "x" * 50}, request.request_id)[:cut])
            await asyncio.sleep(0.01)
            peer.abort()
        else:
            await peer.default(request)

    async with ScriptedServer(handler) as server:
        conn = await open_conn(server)
        with pytest.raises(AutoReconnect) as info:
            await conn.command("db", {"ping": 1})
        assert not isinstance(info.value, NetworkTimeout)
        assert conn.is_closed


async def test_socket_timeout_closes() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name != "slow":
            return await peer.default(request)
        await asyncio.sleep(10)

    settings = ConnectionSettings(host=HOST, socket_timeout=0.05)
    async with ScriptedServer(handler) as server:
        conn = await open_conn(server, settings)
        with pytest.raises(NetworkTimeout):
            await conn.command("db", {"slow": 1})
        assert conn.is_closed


async def test_operation_deadline() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name != "slow":
            return await peer.default(request)
        await asyncio.sleep(10)

    async with ScriptedServer(handler) as server:
        conn = await open_conn(server)
        deadline = asyncio.get_running_loop().time() + 0.05
        with pytest.raises(NetworkTimeout):
            await conn.command("db", {"slow": 1}, deadline=deadline)
        assert conn.is_closed


async def test_expired_deadline_sends_nothing() -> None:
    async with ScriptedServer() as server:
        conn = await open_conn(server)
        deadline = asyncio.get_running_loop().time() - 1
        with pytest.raises(NetworkTimeout):
            await conn.command("db", {"ping": 1}, deadline=deadline)
        assert not conn.is_closed and len(server.requests) == 1
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_handshake_timeout() -> None:
    async def silent(request: Request, peer: Peer) -> None:
        await asyncio.sleep(10)

    async with ScriptedServer(silent) as server:
        with pytest.raises(NetworkTimeout):
            await connect(server.address, ConnectionSettings(host=HOST, connect_timeout=0.05), id=1)


async def test_connect_timeout() -> None:
    # 192.0.2.0/24 is TEST-NET-1: never routed, so the SYN goes unanswered (or fails fast
    # where there is no route); both must surface as the driver's errors, quickly.
    settings = ConnectionSettings(host=HOST, connect_timeout=0.05)
    with pytest.raises(AutoReconnect):
        await connect(("192.0.2.1", 27017), settings, id=1)


async def test_connection_refused() -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(AutoReconnect, match=r"127\.0\.0\.1"):
        await connect(("127.0.0.1", port), SETTINGS, id=1)


async def test_unix_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "mongodb-test.sock")
    async with ScriptedServer(unix_path=path):
        conn = await connect((path, None), SETTINGS, id=1)
        assert await conn.command("admin", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_ipv6_loopback() -> None:
    try:
        server = await asyncio.start_server(lambda r, w: w.close(), "::1", 0)
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    port = server.sockets[0].getsockname()[1]
    try:
        conn = await connect(("::1", port), SETTINGS, id=1, handshake=False)
        assert not conn.is_closed
        conn.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_load_balanced_needs_service_id() -> None:
    settings = ConnectionSettings(host=HOST, load_balanced=True)
    async with ScriptedServer() as server:
        with pytest.raises(ConfigurationError, match="load balancing mode, but the server"):
            await open_conn(server, settings)
    oid = ObjectId()
    async with ScriptedServer(hello_extra={"serviceId": pybson.ObjectId(str(oid))}) as server:
        conn = await open_conn(server, settings)
        assert conn.service_id == oid
        assert server.requests[0].command["loadBalanced"] is True
        conn.close()


async def test_message_too_large_is_refused_before_sending() -> None:
    async with ScriptedServer(hello_extra={"maxMessageSizeBytes": 1000}) as server:
        conn = await open_conn(server)
        with pytest.raises(ProtocolError, match="maxMessageSizeBytes"):
            await conn.command("db", {"echo": "x" * 2000})
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_command_document_too_large() -> None:
    async with ScriptedServer(hello_extra={"maxBsonObjectSize": 100}) as server:
        conn = await open_conn(server)
        with pytest.raises(DocumentTooLarge):
            await conn.command("db", {"echo": "x" * (100 + 16 * 1024)})
        assert await conn.command("db", {"echo": "x" * 200}, check=True)
        conn.close()


async def test_reply_larger_than_max_message_size() -> None:
    async def handler(request: Request, peer: Peer) -> None:
        if request.name == "big":
            await peer.reply(request, {"ok": 1, "x": "x" * 1000})
        else:
            await peer.default(request)

    async with ScriptedServer(handler, hello_extra={"maxMessageSizeBytes": 1000}) as server:
        conn = await open_conn(server)
        with pytest.raises(ProtocolError):
            await conn.command("db", {"big": 1})
        assert conn.is_closed


def test_from_client_options() -> None:
    from asyncmongo.core.uri import parse

    options = parse(
        "mongodb://h/?appname=x&connectTimeoutMS=1500&socketTimeoutMS=0&tls=true"
        "&tlsAllowInvalidHostnames=true&compressors=zstd,zlib&zlibCompressionLevel=3"
    )
    settings = ConnectionSettings.from_client_options(options)
    assert settings.app_name == "x" and settings.connect_timeout == 1.5
    assert settings.socket_timeout is None
    assert settings.tls.enabled and settings.tls.allow_invalid_hostnames
    assert settings.tls.verify_certificates and not settings.tls.check_hostname
    assert settings.compression == CompressionSettings(("zstd", "zlib"), 3)
    api = ServerApi("1")
    assert (
        ConnectionSettings.from_client_options(parse("mongodb://h", server_api=api)).server_api
        == api
    )
    with pytest.raises(ConfigurationError):
        ConnectionSettings.from_client_options(parse("mongodb://h", server_api={"version": "1"}))
