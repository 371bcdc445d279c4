"""``kms_connect_callback``: the client-side encryption prose tests 28 ("KMS Connect
Callback", cases 1-6), and the spec's rule that TLS to the KMS is end to end.

The prose tests need real AWS KMS credentials; here the KMS is asyncmongo.testing's simulated
AWS KMS (``AwsKms``, over TLS with a test CA, reached through the master key's ``endpoint``),
and the proxies are asyncmongo.testing's ``KmsHttpProxy`` in plain and HTTPS modes, the
latter with a certificate from a CA of its own. So case 2's two TLS layers are told apart:
the callback trusts only the proxy's CA, the driver (``kms_tls_options``) only the KMS's.
Case 3's mongocryptd is asyncmongo.testing's QueryAnalyzer.

The callbacks come in the shapes the option takes: async returning a ``socket.socket`` (the
plain proxy), async returning an asyncio stream pair (the HTTPS proxy: asyncio cannot add
TLS on an ``ssl.SSLSocket``), and a plain function returning a socket.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import AsyncClientEncryption, AutoEncryptionOpts, EncryptionError
from asyncmongo.encryption.kms_connect import KmsConnectCallbackError, KmsConnection
from asyncmongo.errors import AutoReconnect, InvalidArgument
from asyncmongo.testing import QueryAnalyzer, Standalone
from asyncmongo.testing.kms import AwsKms, KmsHttpProxy
from tests.encryption.kms_env import AWS_ARN, AWS_KEY_ID, AWS_SECRET, KmsCerts, make_certs
from tests.support import certs

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pymongocrypt") is None,
                       reason="in-use encryption needs pymongocrypt "
                              "(pip install 'asyncmongo[encryption]')"),
    pytest.mark.timeout(120),
]

KEY_VAULT = "keyvault.datakeys"
AWS = {"aws": {"accessKeyId": AWS_KEY_ID, "secretAccessKey": AWS_SECRET}}
DETERMINISTIC = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
#: A KMS host name that does not resolve: only the proxy knows where it is.
KMS_NAME = "kms.example.test"
Callback = Callable[[str, int, float], Awaitable[KmsConnection]]


@pytest.fixture(scope="module")
def kms_certs(tmp_path_factory: pytest.TempPathFactory) -> KmsCerts:
    return make_certs(tmp_path_factory.mktemp("kms-certs"))


@pytest.fixture(scope="module")
def proxy_certs(tmp_path_factory: pytest.TempPathFactory) -> certs.CertFiles:
    """The HTTPS proxy's own CA and certificate (the spec's x509gen/ca.pem)."""
    return certs.generate(tmp_path_factory.mktemp("proxy-certs"))


# -- the callbacks of the spec's Setup ---------------------------------------------------------

def connect_request(host: str, port: int) -> bytes:
    return f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


def check_connect_reply(head: bytes) -> None:
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(f"the proxy refused the CONNECT: {head[:60]!r}")


def plain_proxy_callback(proxy: KmsHttpProxy) -> Callback:
    """Setup's plain HTTP proxy callback, returning a connected ``socket.socket``."""
    async def callback(host: str, port: int, timeout_s: float) -> KmsConnection:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (proxy.host, proxy.port))
            await loop.sock_sendall(sock, connect_request(host, port))
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                chunk = await loop.sock_recv(sock, 1)
                if not chunk:
                    raise ConnectionError("the proxy closed the connection")
                head += chunk
            check_connect_reply(head)
        except BaseException:
            sock.close()
            raise
        return sock
    return callback


def https_proxy_callback(proxy: KmsHttpProxy, proxy_ca: Path) -> Callback:
    """Setup's HTTPS proxy callback: TLS to the proxy verified with the proxy's CA; the
    tunnel is returned as an asyncio stream pair."""
    context = ssl.create_default_context(cafile=str(proxy_ca))

    async def callback(host: str, port: int, timeout_s: float) -> KmsConnection:
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port, ssl=context)
        try:
            writer.write(connect_request(host, port))
            check_connect_reply(await reader.readuntil(b"\r\n\r\n"))
        except BaseException:
            writer.close()
            raise
        return reader, writer
    return callback


async def control(proxy: KmsHttpProxy, method: str, path: str,
                  context: ssl.SSLContext | None = None) -> str:
    """``POST /reset`` or ``GET /metrics`` over HTTP(S), as the spec's tests do: the body."""
    reader, writer = await asyncio.open_connection(proxy.host, proxy.port, ssl=context)
    try:
        writer.write(f"{method} {path} HTTP/1.1\r\nHost: {proxy.host}:{proxy.port}\r\n"
                     f"Content-Length: 0\r\n\r\n".encode())
        response = await reader.read()
    finally:
        writer.close()
    head, _, body = response.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 200"), head
    return body


async def connect_count(proxy: KmsHttpProxy, context: ssl.SSLContext | None = None) -> int:
    metrics = dict(line.split(" ", 1)
                   for line in (await control(proxy, "GET", "/metrics", context)).splitlines())
    return int(metrics["connect_count"])


# -- the environment ---------------------------------------------------------------------------

@dataclass
class Env:
    uri: str
    client: AsyncMongoClient[Any]
    aws: AwsKms
    plain: KmsHttpProxy
    https: KmsHttpProxy
    kms_certs: KmsCerts
    proxy_ca: Path

    @property
    def master_key(self) -> dict[str, Any]:
        return {"region": "us-east-1", "key": AWS_ARN, "endpoint": self.aws.endpoint}

    @property
    def tls(self) -> dict[str, dict[str, str]]:
        return {"aws": self.kms_certs.tls_options()}

    def proxy_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.proxy_ca))

    def encryption(self, callback: Any, client: AsyncMongoClient[Any] | None = None,
                   **kwargs: Any) -> AsyncClientEncryption:
        return AsyncClientEncryption(AWS, KEY_VAULT, client or self.client, CodecOptions(),
                                     kms_tls_options=self.tls, kms_connect_callback=callback,
                                     **kwargs)


@pytest.fixture
async def env(kms_certs: KmsCerts, proxy_certs: certs.CertFiles) -> AsyncIterator[Env]:
    async with Standalone() as server, \
            AwsKms(kms_certs.context(), credentials={AWS_KEY_ID: AWS_SECRET}) as aws, \
            KmsHttpProxy() as plain, \
            KmsHttpProxy(proxy_certs.server_context()) as https, \
            AsyncMongoClient(server.uri) as client:
        yield Env(server.uri, client, aws, plain, https, kms_certs, proxy_certs.ca)


# -- prose 28 ----------------------------------------------------------------------------------

async def test_case_1_plain_http_proxy(env: Env) -> None:
    async with env.encryption(plain_proxy_callback(env.plain)) as client_encryption:
        await control(env.plain, "POST", "/reset")
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(key_id, Binary) and key_id.subtype == 4
    assert await connect_count(env.plain) >= 1
    assert env.plain.targets[0] == env.aws.endpoint
    assert len(env.aws.requests) == 1  # the KMS was reached, through the tunnel


async def test_case_2_https_proxy(env: Env) -> None:
    callback = https_proxy_callback(env.https, env.proxy_ca)
    async with env.encryption(callback) as client_encryption:
        await control(env.https, "POST", "/reset", env.proxy_context())
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(key_id, Binary)
    assert await connect_count(env.https, env.proxy_context()) >= 1
    assert env.plain.connect_count == 0


async def test_case_3_full_auto_encryption_pipeline_via_proxy(env: Env) -> None:
    callback = plain_proxy_callback(env.plain)
    await env.client.keyvault.drop_collection("datakeys")
    await env.client.db.drop_collection("coll")
    async with env.encryption(callback) as client_encryption:
        data_key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    schema = {"bsonType": "object", "properties": {"encrypted_string": {"encrypt": {
        "keyId": [data_key_id], "bsonType": "string", "algorithm": DETERMINISTIC}}}}
    await control(env.plain, "POST", "/reset")
    async with QueryAnalyzer() as analyzer:
        opts = AutoEncryptionOpts(AWS, KEY_VAULT, schema_map={"db.coll": schema},
                                  kms_tls_options=env.tls, kms_connect_callback=callback,
                                  **analyzer.auto_encryption_options())
        async with AsyncMongoClient(env.uri, auto_encryption_opts=opts) as client_encrypted:
            await client_encrypted.db.coll.insert_one({"_id": 1, "encrypted_string": "hello"})
            found = await client_encrypted.db.coll.find_one({"_id": 1})
    assert found == {"_id": 1, "encrypted_string": "hello"}
    stored = await env.client.db.coll.find_one({"_id": 1})
    assert stored is not None
    assert isinstance(stored["encrypted_string"], Binary)
    assert stored["encrypted_string"].subtype == 6
    # one KMS request: the decrypted data key is cached for the find
    assert await connect_count(env.plain) == 1


async def test_case_4_error(env: Env) -> None:
    async def refusing(host: str, port: int, timeout_s: float) -> KmsConnection:
        raise RuntimeError("no route to the KMS configured")

    async with env.encryption(refusing) as client_encryption:
        with pytest.raises(EncryptionError, match="no route to the KMS") as info:
            await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(info.value.cause, KmsConnectCallbackError)
    assert env.aws.requests == []


async def test_case_5_callback_receives_the_timeout(env: Env) -> None:
    """The prose setup (key vault client with timeoutMS=1000), and an AsyncClientEncryption
    with timeout_ms=1000: there the callback gets what is left of the operation's second."""
    received: list[float] = []
    proxied = plain_proxy_callback(env.plain)

    async def recording(host: str, port: int, timeout_s: float) -> KmsConnection:
        received.append(timeout_s)
        return await proxied(host, port, timeout_s)

    async with AsyncMongoClient(env.uri, timeoutMS=1000) as timed:
        async with env.encryption(recording, timed) as client_encryption:
            await client_encryption.create_data_key("aws", master_key=env.master_key)
        async with env.encryption(recording, timed, timeout_ms=1000) as client_encryption:
            await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert len(received) == 2
    assert all(timeout_s > 0 for timeout_s in received)
    assert received[0] <= 10.0  # no timeoutMS over the KMS request: the KMS default
    assert received[1] <= 1.0  # the rest of timeout_ms


async def test_case_6_retry(env: Env) -> None:
    calls: list[tuple[str, int]] = []
    proxied = plain_proxy_callback(env.plain)

    async def flaky(host: str, port: int, timeout_s: float) -> KmsConnection:
        calls.append((host, port))
        if len(calls) == 1:
            raise ConnectionResetError("simulated network error")
        return await proxied(host, port, timeout_s)

    async with env.encryption(flaky) as client_encryption:
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(key_id, Binary)
    assert len(calls) == 2  # re-invoked after the network error
    assert env.plain.connect_count == 1


# -- the rest of the option ---------------------------------------------------------------------

async def test_tls_verifies_the_kms_host_not_where_the_callback_connected(
        env: Env, kms_certs: KmsCerts) -> None:
    """A callback that connects elsewhere (a server whose certificate, from the same trusted
    CA, is for another host) fails certificate verification for the KMS host."""
    wrong_cert = kms_certs.files.server_wrong_host
    async with AwsKms(kms_certs.context(wrong_cert)) as decoy:
        async def elsewhere(host: str, port: int, timeout_s: float) -> KmsConnection:
            return await asyncio.open_connection(decoy.host, decoy.port)

        async with env.encryption(elsewhere) as client_encryption:
            with pytest.raises(EncryptionError, match=r"IP address mismatch|hostname mismatch"):
                await client_encryption.create_data_key("aws", master_key=env.master_key)
        assert decoy.requests == []


async def test_sni_and_verification_name_the_kms_host(
        env: Env, tmp_path: Path, proxy_certs: certs.CertFiles) -> None:
    """A KMS known by a name only the proxy resolves (``kms.example.test``), through the
    HTTPS proxy: the KMS sees that name as SNI, and its certificate (for that name, from the
    KMS CA) is verified against it."""
    kms_files = certs.generate(tmp_path, extra_server_names=[KMS_NAME])
    seen: list[str | None] = []
    context = kms_files.server_context()

    def record(sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        seen.append(name)

    context.sni_callback = record
    async with AwsKms(context, credentials={AWS_KEY_ID: AWS_SECRET}) as named, \
            KmsHttpProxy(proxy_certs.server_context(),
                         map={f"{KMS_NAME}:443": named.endpoint}) as https:
        callback = https_proxy_callback(https, env.proxy_ca)
        async with AsyncClientEncryption(
                AWS, KEY_VAULT, env.client, CodecOptions(),
                kms_tls_options={"aws": {"tlsCAFile": str(kms_files.ca)}},
                kms_connect_callback=callback) as client_encryption:
            await client_encryption.create_data_key(
                "aws", master_key={"region": "us-east-1", "key": AWS_ARN,
                                   "endpoint": KMS_NAME})
    assert seen == [KMS_NAME]
    assert https.targets == [f"{KMS_NAME}:443"]
    assert len(named.requests) == 1


async def test_a_plain_function_returning_a_socket(env: Env) -> None:
    """A plain (blocking) callback is allowed: it connects straight to the KMS here."""
    calls: list[float] = []

    def direct(host: str, port: int, timeout_s: float) -> KmsConnection:
        calls.append(timeout_s)
        return socket.create_connection((host, port), timeout=timeout_s)

    async with env.encryption(direct) as client_encryption:
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
        assert await client_encryption.decrypt(await client_encryption.encrypt(
            "x", DETERMINISTIC, key_id=key_id)) == "x"
    assert calls and env.plain.connect_count == 0


async def test_network_errors_every_time_fail_after_the_kms_retries(env: Env) -> None:
    calls = 0

    async def down(host: str, port: int, timeout_s: float) -> KmsConnection:
        nonlocal calls
        calls += 1
        raise ConnectionRefusedError("proxy down")

    async with env.encryption(down) as client_encryption:
        with pytest.raises(EncryptionError, match="proxy down") as info:
            await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(info.value.cause, AutoReconnect)
    assert calls > 1  # libmongocrypt retried, calling the callback again each time


@pytest.mark.parametrize("returned", ["not a socket", None])
async def test_a_result_that_is_not_a_connection_fails(env: Env, returned: Any) -> None:
    async def wrong(host: str, port: int, timeout_s: float) -> Any:
        return returned

    async with env.encryption(wrong) as client_encryption:
        with pytest.raises(EncryptionError, match=r"must return a socket\.socket") as info:
            await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(info.value.cause, KmsConnectCallbackError)


async def test_an_ssl_socket_is_refused_with_the_reason(env: Env, kms_certs: KmsCerts) -> None:
    def tls_socket(host: str, port: int, timeout_s: float) -> KmsConnection:
        context = ssl.create_default_context(cafile=str(kms_certs.files.ca))
        return context.wrap_socket(socket.create_connection((host, port)),
                                   server_hostname=host, do_handshake_on_connect=False)

    async with env.encryption(tls_socket) as client_encryption:
        with pytest.raises(EncryptionError, match=r"ssl\.SSLSocket"):
            await client_encryption.create_data_key("aws", master_key=env.master_key)


async def test_the_callback_must_be_callable(env: Env) -> None:
    with pytest.raises(InvalidArgument, match="kms_connect_callback"):
        env.encryption("127.0.0.1:3128")
    with pytest.raises(InvalidArgument, match="kms_connect_callback"):
        AutoEncryptionOpts(AWS, KEY_VAULT, kms_connect_callback=3128)  # type: ignore[arg-type]


async def test_the_proxy_answers_unknown_requests_404_and_bad_targets_502(env: Env) -> None:
    reader, writer = await asyncio.open_connection(env.plain.host, env.plain.port)
    writer.write(b"GET /nothing HTTP/1.1\r\n\r\n")
    assert (await reader.read()).startswith(b"HTTP/1.1 404")
    writer.close()
    reader, writer = await asyncio.open_connection(env.plain.host, env.plain.port)
    writer.write(connect_request("127.0.0.1", 1))
    assert (await reader.read()).startswith(b"HTTP/1.1 502")
    writer.close()
    assert env.plain.connect_count == 1
    await control(env.plain, "POST", "/reset")
    assert await connect_count(env.plain) == 0 and env.plain.targets == []


async def test_closing_the_proxy_ends_open_tunnels(env: Env) -> None:
    """A tunnel open when the proxy closes is cut, and its handler ends without error."""
    callback = plain_proxy_callback(env.plain)
    sock = await callback("127.0.0.1", env.aws.port, 10.0)
    assert isinstance(sock, socket.socket)
    try:
        await env.plain.close()
        loop = asyncio.get_running_loop()
        assert await asyncio.wait_for(loop.sock_recv(sock, 1), 5) == b""
    finally:
        sock.close()
    assert "0 open" in repr(env.plain)


async def test_auto_encryption_kms_requests_are_bounded_by_the_clients_timeout_ms(env: Env) -> None:
    """An auto-encrypting client's timeoutMS bounds its KMS requests (CSOT spec, "Client
    Side Encryption"), so the callback is given at most that."""
    received: list[float] = []
    proxied = plain_proxy_callback(env.plain)

    async def recording(host: str, port: int, timeout_s: float) -> KmsConnection:
        received.append(timeout_s)
        return await proxied(host, port, timeout_s)

    async with env.encryption(proxied) as client_encryption:
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    schema = {"bsonType": "object", "properties": {"s": {"encrypt": {
        "keyId": [key_id], "bsonType": "string", "algorithm": DETERMINISTIC}}}}
    async with QueryAnalyzer() as analyzer:
        opts = AutoEncryptionOpts(AWS, KEY_VAULT, schema_map={"db.coll": schema},
                                  kms_tls_options=env.tls, kms_connect_callback=recording,
                                  **analyzer.auto_encryption_options())
        async with AsyncMongoClient(env.uri, auto_encryption_opts=opts,
                                    timeoutMS=5000) as client_encrypted:
            await client_encrypted.db.coll.insert_one({"_id": 1, "s": "x"})
    assert len(received) == 1
    assert 0 < received[0] <= 5.0
    # and the limit holds: a KMS slower than the client's timeoutMS fails the insert
    async with QueryAnalyzer() as analyzer:
        opts = AutoEncryptionOpts(AWS, KEY_VAULT, schema_map={"db.coll": schema},
                                  kms_tls_options=env.tls, kms_connect_callback=recording,
                                  **analyzer.auto_encryption_options())
        async with AsyncMongoClient(env.uri, auto_encryption_opts=opts,
                                    timeoutMS=800) as client_encrypted:
            # connections to the server and mongocryptd first (no data key needed), so the
            # budget below is spent on the KMS
            await client_encrypted.db.other.insert_one({"_id": 1})
            env.aws.delay_s = 3.0
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(EncryptionError, match="timeoutMS expired") as info:
                await client_encrypted.db.coll.insert_one({"_id": 2, "s": "y"})
            assert loop.time() - started < 2.5
    assert info.value.timeout
    assert received[-1] <= 0.8


async def test_a_callback_that_hangs_is_cut_by_timeout_ms(env: Env) -> None:
    async def hangs(host: str, port: int, timeout_s: float) -> KmsConnection:
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    loop = asyncio.get_running_loop()
    async with env.encryption(hangs, timeout_ms=300) as client_encryption:
        started = loop.time()
        with pytest.raises(EncryptionError, match="timeoutMS expired") as info:
            await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert loop.time() - started < 2.0
    assert info.value.timeout


@pytest.mark.parametrize("shape", ["socket", "streams"])
async def test_cancelled_during_the_tls_handshake_closes_the_connection(
        env: Env, shape: str) -> None:
    """The callback's connection goes to the proxy without a CONNECT, so the driver's TLS
    handshake never completes; cancelling the operation then closes that connection."""
    opened: list[Any] = []
    called = asyncio.Event()

    async def stalls(host: str, port: int, timeout_s: float) -> KmsConnection:
        if shape == "socket":
            sock = socket.create_connection((env.plain.host, env.plain.port))
            opened.append(sock)
            called.set()
            return sock
        reader, writer = await asyncio.open_connection(env.plain.host, env.plain.port)
        opened.append(writer)
        called.set()
        return reader, writer

    async with env.encryption(stalls) as client_encryption:
        task = asyncio.ensure_future(
            client_encryption.create_data_key("aws", master_key=env.master_key))
        await called.wait()
        await asyncio.sleep(0.1)  # the driver's ClientHello goes out; no answer comes
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    if shape == "socket":
        assert opened[0].fileno() == -1
    else:
        assert opened[0].transport.is_closing()
    assert env.plain.connect_count == 0
