"""MONGODB-OIDC beyond the prose tests: the simulator's token checks, reauthentication when a
token expires (inside a cursor's getMores and inside a transaction), the callback rate limit,
callback kinds (sync, async, plain callables), and the built-in environments (test, k8s token
files; azure and gcp against local metadata servers on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.auth_oidc import OIDCCallback, OIDCCallbackContext, OIDCCallbackResult
from asyncmongo.bson import decode, encode
from asyncmongo.core.auth.oidc import (
    MIN_CALLBACK_INTERVAL_SECONDS,
    host_allowed,
    jwt_start_command,
    principal_start_command,
)
from asyncmongo.core.http import HttpRequest, Url
from asyncmongo.errors import OperationFailure
from asyncmongo.runtime import http, oidc_providers
from asyncmongo.testing import TestIdentityProvider, mint_token
from asyncmongo.testing.scram import SaslServer, UserDirectory
from tests.auth.oidc_support import CountingCallback, Env, oidc_deployment, oidc_of

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def env() -> Any:
    async with oidc_deployment() as env:
        yield env


# -- the simulator's checks ------------------------------------------------------------------

def _sasl(users: UserDirectory) -> SaslServer:
    return SaslServer(users)


def test_the_identity_provider_signs_rs256_with_cryptography() -> None:
    idp = TestIdentityProvider()
    assert idp.algorithm == "RS256"
    token = mint_token(idp, "alice", expires_in=60)
    header = json.loads(_part(token, 0))
    claims = json.loads(_part(token, 1))
    assert header["alg"] == "RS256"
    assert (claims["sub"], claims["iss"], claims["aud"]) == ("alice", idp.issuer, idp.audience)
    assert idp.verify(token).subject == "alice"


def _part(token: str, index: int) -> bytes:
    import base64

    text = token.split(".")[index]
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.parametrize(
    "make_token",
    [
        pytest.param(lambda idp: idp.mint_token(expires_in=-1), id="expired"),
        pytest.param(lambda idp: idp.mint_token(audience="other"), id="audience"),
        pytest.param(lambda idp: idp.mint_token(issuer="https://evil"), id="issuer"),
        pytest.param(lambda idp: TestIdentityProvider().mint_token(), id="other-key"),
        pytest.param(lambda idp: idp.mint_token()[:-4] + "AAAA", id="signature"),
        pytest.param(lambda idp: "not-a-jwt", id="garbage"),
    ],
)
def test_the_server_refuses_bad_tokens_with_18(make_token: Callable[[Any], str]) -> None:
    users = UserDirectory()
    idp = users.enable_oidc()
    sasl = _sasl(users)
    reply = sasl.handle("$external", jwt_start_command(make_token(idp)))
    assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 18, "AuthenticationFailed")
    assert reply["errmsg"] == "Authentication failed."  # the reason stays in the server
    assert sasl.authenticated_users == []


def test_the_server_answers_a_principal_step_with_its_idp_info() -> None:
    users = UserDirectory()
    idp = users.enable_oidc()
    sasl = _sasl(users)
    reply = sasl.handle("$external", principal_start_command("test_user1"))
    assert reply["done"] is False
    assert decode(reply["payload"]) == {"issuer": idp.issuer, "clientId": idp.client_id}
    done = sasl.handle("$external", {"saslContinue": 1, "conversationId": reply["conversationId"],
                                     "payload": encode({"jwt": idp.mint_token("bob")})})
    assert done["done"] is True
    assert [u.name for u in sasl.authenticated_users] == ["bob"]


def test_an_expired_connection_token_requires_reauthentication() -> None:
    now = [1000.0]
    users = UserDirectory()
    idp = users.enable_oidc(TestIdentityProvider(clock=lambda: now[0]))
    sasl = _sasl(users)
    assert sasl.handle("$external", jwt_start_command(idp.mint_token(expires_in=10)))["ok"] == 1
    assert not sasl.reauthentication_required()
    now[0] += 11
    assert sasl.reauthentication_required()


async def test_an_expired_token_gets_391_from_the_server(env: Env) -> None:
    callback = CountingCallback(lambda context, n: OIDCCallbackResult(env.token(expires_in=0.3)))
    async with env.client(callback) as client:
        await client.test.c.insert_one({"x": 1})
        env.events.seen.clear()
        await asyncio.sleep(0.4)
        assert await client.test.c.count_documents({}) == 1
        assert ("failed", "aggregate") in env.events.seen  # the 391, then the retry
        assert env.events.seen[-1] == ("succeeded", "aggregate")
        assert callback.count == 2


# -- reauthentication inside cursors and transactions ----------------------------------------

async def test_reauthentication_inside_a_cursor_when_the_token_expires(env: Env) -> None:
    callback = CountingCallback(lambda context, n: OIDCCallbackResult(env.token(expires_in=0.5)))
    async with env.client(callback) as client:
        await client.test.c.insert_many([{"i": i} for i in range(6)])
        cursor = client.test.c.find({}, batch_size=2)
        seen = [await cursor.next(), await cursor.next()]
        await asyncio.sleep(0.6)  # the connection's token expires mid-cursor
        seen += [doc async for doc in cursor]
        assert [d["i"] for d in seen] == list(range(6))
        assert ("failed", "getMore") in env.events.seen
        assert callback.count == 2


async def test_reauthentication_of_a_getmore_on_391(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.test.c.insert_many([{"i": i} for i in range(4)])
        cursor = client.test.c.find({}, batch_size=2)
        first = await cursor.next()
        with env.fail_point(["getMore"], errorCode=391):
            rest = [doc async for doc in cursor]
        assert len([first, *rest]) == 4
        assert callback.count == 2


async def test_reauthentication_inside_a_transaction() -> None:
    async with oidc_deployment(replica_set=True) as env:
        callback = CountingCallback(env.good())
        async with env.client(callback) as client:
            collection = client.test.c
            await collection.insert_one({"_id": 0})
            async with client.start_session() as session:
                async with await session.start_transaction():
                    await collection.insert_one({"_id": 1}, session=session)
                    with env.fail_point(["insert"], errorCode=391):
                        await collection.insert_one({"_id": 2}, session=session)
                    with env.fail_point(["find"], errorCode=391):
                        assert await collection.find_one({"_id": 1}, session=session)
            assert sorted(d["_id"] for d in await collection.find({}).to_list()) == [0, 1, 2]
            assert callback.count == 3


# -- the callback: rate limit, kinds, timeouts -----------------------------------------------

async def test_machine_callbacks_are_at_least_100ms_apart(env: Env) -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []

    def answer(context: OIDCCallbackContext, n: int) -> OIDCCallbackResult:
        times.append(loop.time())
        return OIDCCallbackResult(env.token())

    callback = CountingCallback(answer)
    async with env.client(callback) as client:
        for _ in range(3):
            with env.fail_point(["find"], errorCode=391):
                await client.test.c.find_one()
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) >= 3
    assert all(gap >= MIN_CALLBACK_INTERVAL_SECONDS * 0.95 for gap in gaps), gaps


async def test_a_sync_oidc_callback_subclass_and_a_plain_function_work(env: Env) -> None:
    class SyncCallback(OIDCCallback):
        calls = 0

        def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
            SyncCallback.calls += 1
            return OIDCCallbackResult(env.token(), expires_in_seconds=3600)

    async with env.client(SyncCallback()) as client:
        await client.test.c.find_one()
    assert SyncCallback.calls == 1

    async def function(context: OIDCCallbackContext) -> OIDCCallbackResult:
        return OIDCCallbackResult(env.token())

    async with env.client(function) as client:
        await client.test.c.find_one()


async def test_a_callback_that_outlives_its_timeout_is_cancelled(env: Env) -> None:
    async def slow(context: OIDCCallbackContext) -> OIDCCallbackResult:
        await asyncio.sleep(10)
        raise AssertionError("not cancelled")

    async with env.client(slow, connectTimeoutMS=300) as client:
        with pytest.raises(OperationFailure, match="did not answer"):
            await client.test.c.find_one()


async def test_speculative_authentication_only_with_a_cached_token(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.aconnect()
        oidc = oidc_of(client)
        assert oidc.speculative_document() is None
        await client.test.c.find_one()
        document = oidc.speculative_document()
        assert document is not None and document["db"] == "$external"
        assert decode(document["payload"]) == {"jwt": oidc.access_token}


def test_allowed_hosts_matching() -> None:
    assert host_allowed("cluster0.abc.mongodb.net", ["*.mongodb.net"])
    assert host_allowed("a.b.mongodb.net", ["*.mongodb.net"])
    assert not host_allowed("mongodb.net.evil.com", ["*.mongodb.net"])
    assert host_allowed("LOCALHOST", ["localhost"])
    assert not host_allowed("example.com", [])


# -- the built-in environments ---------------------------------------------------------------

def _token_file(tmp_path: Any, token: str) -> str:
    path = tmp_path / "token"
    path.write_text(token + "\n")
    return str(path)


async def test_environment_test_reads_oidc_token_file(
    env: Env, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OIDC_TOKEN_FILE", _token_file(tmp_path, env.token()))
    async with AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                                authMechanismProperties={"ENVIRONMENT": "test"}) as client:
        await client.test.c.insert_one({"ok": True})
        assert await client.test.c.count_documents({}) == 1


@pytest.mark.parametrize("variable", ["AZURE_FEDERATED_TOKEN_FILE",
                                      "AWS_WEB_IDENTITY_TOKEN_FILE"])
async def test_environment_k8s_token_file_paths(
    env: Env, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.delenv("AZURE_FEDERATED_TOKEN_FILE", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    monkeypatch.setenv(variable, _token_file(tmp_path, env.token()))
    async with AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                                authMechanismProperties={"ENVIRONMENT": "k8s"}) as client:
        await client.test.c.find_one()


def test_environment_k8s_default_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_FEDERATED_TOKEN_FILE", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    callback = oidc_providers.TokenFileCallback("k8s")
    assert callback.path() == "/var/run/secrets/kubernetes.io/serviceaccount/token"


@asynccontextmanager
async def metadata_server(
    answer: Callable[[str, dict[str, str]], tuple[int, bytes]],
) -> AsyncIterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """An HTTP server on 127.0.0.1 answering ``answer(target, headers)``; yields its base URL
    and the requests it saw."""
    requests: list[tuple[str, dict[str, str]]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readline()).decode()
        headers: dict[str, str] = {}
        while (line := (await reader.readline()).decode()) not in ("\r\n", ""):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        target = request_line.split(" ")[1]
        requests.append((target, headers))
        status, body = answer(target, headers)
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                     + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", requests
    finally:
        server.close()
        await server.wait_closed()


async def test_environment_azure_asks_imds(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps({"access_token": env.token(), "expires_in": "3599"}).encode()
    async with metadata_server(lambda target, headers: (200, body)) as (base, requests):
        monkeypatch.setattr(oidc_providers, "AZURE_IMDS_URL", base + "/metadata/token")
        uri = env.deployment.uri.replace("mongodb://", "mongodb://my-client-id@")
        properties = {"ENVIRONMENT": "azure", "TOKEN_RESOURCE": "api://a,b:c"}
        async with AsyncMongoClient(uri, authMechanism="MONGODB-OIDC",
                                    authMechanismProperties=properties) as client:
            await client.test.c.find_one()
    target, headers = requests[0]
    assert target == ("/metadata/token?api-version=2018-02-01&resource=api%3A%2F%2Fa%2Cb%3Ac"
                      "&client_id=my-client-id")
    assert headers["accept"] == "application/json" and headers["metadata"] == "true"


async def test_environment_azure_error_includes_the_body(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = (400, b'{"error":"invalid_request","error_description":"bad client id"}')
    async with metadata_server(lambda target, headers: answer) as (base, _):
        monkeypatch.setattr(oidc_providers, "AZURE_IMDS_URL", base + "/token")
        properties = {"ENVIRONMENT": "azure", "TOKEN_RESOURCE": "r"}
        async with AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                                    authMechanismProperties=properties) as client:
            with pytest.raises(OperationFailure, match=r"400: .*bad client id"):
                await client.test.c.find_one()


async def test_environment_gcp_asks_the_metadata_server(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = env.token().encode()
    async with metadata_server(lambda target, headers: (200, token)) as (base, requests):
        monkeypatch.setattr(oidc_providers, "GCP_METADATA_URL", base + "/identity")
        properties = {"ENVIRONMENT": "gcp", "TOKEN_RESOURCE": "https://aud"}
        async with AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                                    authMechanismProperties=properties) as client:
            await client.test.c.find_one()
    target, headers = requests[0]
    assert target == "/identity?audience=https%3A%2F%2Faud"
    assert headers["metadata-flavor"] == "Google"


async def test_environment_gcp_unreachable_says_what_to_check(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with metadata_server(lambda target, headers: (200, b"")) as (base, _):
        pass  # closed: nothing listens there any more
    monkeypatch.setattr(oidc_providers, "GCP_METADATA_URL", base + "/identity")
    properties = {"ENVIRONMENT": "gcp", "TOKEN_RESOURCE": "aud"}
    async with AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                                authMechanismProperties=properties) as client:
        with pytest.raises(OperationFailure, match="ENVIRONMENT:gcp: no answer"):
            await client.test.c.find_one()


async def test_http_get_reads_chunked_bodies() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        loop = asyncio.get_running_loop()
        response = await http.request(
            HttpRequest("GET", Url.parse(f"http://127.0.0.1:{port}/x")), deadline=loop.time() + 5)
    finally:
        server.close()
        await server.wait_closed()
    assert (response.status, response.body) == (200, b"hello world")


async def test_a_refused_token_says_what_to_check(env: Env) -> None:
    callback = CountingCallback(
        lambda context, n: OIDCCallbackResult(env.idp.mint_token(audience="elsewhere")))
    async with env.client(callback) as client:
        with pytest.raises(OperationFailure) as raised:
            await client.test.c.find_one()
    assert raised.value.code == 18
    message = str(raised.value)
    assert "MONGODB-OIDC" in message and "OIDC_CALLBACK" in message and "audience" in message
    assert "eyJ" not in message  # never the token itself
