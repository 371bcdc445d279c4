"""CredentialAuthenticator: against a fake connection whose ``command`` feeds the testing
SCRAM server (negotiation, speculative authentication, the key cache, sharing), and end to end
over a real socket: ``connect()`` against the scripted loopback server playing a mongod with
users."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import OperationFailure as PyMongoOperationFailure

from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.core.auth.scram import ScramCache, ScramMechanism
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.errors import ConfigurationError, NetworkTimeout, OperationFailure
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.connection import ConnectionSettings, connect
from asyncmongo.testing.scram import SaslServer, UserDirectory
from tests.auth.support import CountingPbkdf2
from tests.support.scripted_server import HELLO_REPLY, Peer, Request, ScriptedServer

FAST = {ScramMechanism.SCRAM_SHA_1: 4096, ScramMechanism.SCRAM_SHA_256: 4096}
SUBJECT = "CN=client,OU=Drivers,O=MongoDB"


@pytest.fixture
def users() -> UserDirectory:
    directory = UserDirectory(iterations=FAST)
    directory.add_user("both", "both")
    directory.add_user("sha1", "sha1", mechanisms=["SCRAM-SHA-1"])
    directory.add_user("sha256", "sha256", mechanisms=["SCRAM-SHA-256"])
    directory.add_user("\u2168", "\u2163", mechanisms=["SCRAM-SHA-256"])
    directory.add_plain_user("ldap", "ldappw")
    directory.add_x509_user(SUBJECT)
    return directory


class FakeMongod:
    """One simulated connection: answers the hello like a 4.4+ mongod (or an older one) and
    feeds every other command to a SaslServer."""

    def __init__(
        self,
        users: UserDirectory,
        *,
        speculative: bool = True,
        supported_mechs: bool = True,
        peer_subject: str | None = None,
        hello_extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.sasl = SaslServer(users)
        self.speculative = speculative
        self.supported_mechs = supported_mechs
        self.peer_subject = peer_subject
        self.hello_extra = dict(hello_extra or {})
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.deadlines: list[float | None] = []

    def hello(self, request: Mapping[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = {"isWritablePrimary": True, "maxWireVersion": 21, "ok": 1.0}
        reply.update(self.hello_extra)
        namespace = request.get("saslSupportedMechs")
        if self.supported_mechs and isinstance(namespace, str):
            mechs = self.sasl.sasl_supported_mechs(namespace)
            if mechs is not None:
                reply["saslSupportedMechs"] = mechs
        document = request.get("speculativeAuthenticate")
        if self.speculative and isinstance(document, Mapping):
            answer = self.sasl.speculative_authenticate(document, peer_subject=self.peer_subject)
            if answer is not None:
                reply["speculativeAuthenticate"] = answer
        return reply

    async def command(
        self, db: str, command: Mapping[str, Any], *, deadline: float | None = None
    ) -> dict[str, Any]:
        self.commands.append((db, dict(command)))
        self.deadlines.append(deadline)
        await asyncio.sleep(0)
        return self.sasl.handle(db, command, peer_subject=self.peer_subject)


async def handshake(
    authenticator: CredentialAuthenticator, server: FakeMongod, deadline: float | None = None
) -> dict[str, Any]:
    """What connect() does: hello with the authenticator's fields, then authenticate."""
    hello: dict[str, Any] = {"hello": 1}
    if authenticator.sasl_supported_mechs is not None:
        hello["saslSupportedMechs"] = authenticator.sasl_supported_mechs
    speculative = authenticator.speculative_document()
    if speculative is not None:
        hello["speculativeAuthenticate"] = speculative
    reply = server.hello(hello)
    await authenticator.authenticate(server, reply, deadline=deadline)
    return hello


def names(server: FakeMongod) -> list[str]:
    return [next(iter(command)) for _, command in server.commands]


def negotiate(user: str, password: str, source: str = "admin") -> MongoCredential:
    return MongoCredential(None, source, user, password)


async def test_negotiated_speculative_scram_sha_256(users: UserDirectory) -> None:
    server = FakeMongod(users)
    authenticator = CredentialAuthenticator(negotiate("both", "both"), ScramCache())
    hello = await handshake(authenticator, server)
    assert hello["saslSupportedMechs"] == "admin.both"
    assert hello["speculativeAuthenticate"]["mechanism"] == "SCRAM-SHA-256"
    assert hello["speculativeAuthenticate"]["db"] == "admin"
    assert names(server) == ["saslContinue"]  # the hello carried the saslStart
    assert [u.name for u in server.sasl.authenticated_users] == ["both"]


async def test_negotiation_falls_back_to_scram_sha_1(users: UserDirectory) -> None:
    """A SHA-1-only user: the speculative SCRAM-SHA-256 attempt is silently not answered, the
    hello's saslSupportedMechs says SCRAM-SHA-1, a full conversation follows."""
    server = FakeMongod(users)
    await handshake(CredentialAuthenticator(negotiate("sha1", "sha1")), server)
    assert names(server) == ["saslStart", "saslContinue"]
    assert server.commands[0][1]["mechanism"] == "SCRAM-SHA-1"
    assert [u.name for u in server.sasl.authenticated_users] == ["sha1"]


@pytest.mark.parametrize(
    ("supported_mechs", "user", "expected"),
    [
        (True, "both", "SCRAM-SHA-256"),
        (True, "sha256", "SCRAM-SHA-256"),
        (True, "sha1", "SCRAM-SHA-1"),
        (False, "both", "SCRAM-SHA-1"),  # no saslSupportedMechs: SCRAM-SHA-1
        (False, "sha1", "SCRAM-SHA-1"),
    ],
)
async def test_negotiation_without_speculative_support(
    users: UserDirectory, supported_mechs: bool, user: str, expected: str
) -> None:
    server = FakeMongod(users, speculative=False, supported_mechs=supported_mechs)
    await handshake(CredentialAuthenticator(negotiate(user, user)), server)
    assert server.commands[0][1]["mechanism"] == expected
    assert [u.name for u in server.sasl.authenticated_users] == [user]


@pytest.mark.parametrize("password", ["IV", "I\u00adV", "\u2163"])
async def test_saslprep_users_authenticate(users: UserDirectory, password: str) -> None:
    server = FakeMongod(users)
    await handshake(CredentialAuthenticator(negotiate("\u2168", password)), server)
    assert [u.name for u in server.sasl.authenticated_users] == ["\u2168"]


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        (None, "both", "wrong"),
        (None, "nobody", "x"),  # spec step 3: an unknown user fails like a wrong password
        ("SCRAM-SHA-256", "both", "wrong"),
        ("SCRAM-SHA-1", "both", "wrong"),
    ],
)
async def test_refused_authentication_is_operation_failure_18(
    users: UserDirectory, mechanism: str | None, user: str, password: str
) -> None:
    server = FakeMongod(users)
    credential = MongoCredential(mechanism, "admin", user, password)
    with pytest.raises(OperationFailure) as info:
        await handshake(CredentialAuthenticator(credential), server)
    assert info.value.code == 18
    assert server.sasl.authenticated_users == []


async def test_explicit_mechanism_the_user_lacks_fails(users: UserDirectory) -> None:
    server = FakeMongod(users)
    credential = MongoCredential("SCRAM-SHA-256", "admin", "sha1", "sha1")
    with pytest.raises(OperationFailure) as info:
        await handshake(CredentialAuthenticator(credential), server)
    assert info.value.code == 334


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
async def test_explicit_mechanism_is_speculative_too(users: UserDirectory, mechanism: str) -> None:
    server = FakeMongod(users)
    authenticator = CredentialAuthenticator(MongoCredential(mechanism, "admin", "both", "both"))
    hello = await handshake(authenticator, server)
    assert "saslSupportedMechs" not in hello
    assert hello["speculativeAuthenticate"]["mechanism"] == mechanism
    assert names(server) == ["saslContinue"]


async def test_plain(users: UserDirectory) -> None:
    server = FakeMongod(users)
    authenticator = CredentialAuthenticator(MongoCredential("PLAIN", "$external", "ldap", "ldappw"))
    hello = await handshake(authenticator, server)
    assert "speculativeAuthenticate" not in hello
    assert server.commands == [
        (
            "$external",
            {
                "saslStart": 1,
                "mechanism": "PLAIN",
                "payload": b"\x00ldap\x00ldappw",
                "autoAuthorize": 1,
            },
        )
    ]
    assert [u.name for u in server.sasl.authenticated_users] == ["ldap"]


@pytest.mark.parametrize("speculative", [True, False])
async def test_x509(users: UserDirectory, speculative: bool) -> None:
    server = FakeMongod(users, speculative=speculative, peer_subject=SUBJECT)
    authenticator = CredentialAuthenticator(MongoCredential("MONGODB-X509", "$external"))
    hello = await handshake(authenticator, server)
    assert hello["speculativeAuthenticate"] == {"authenticate": 1, "mechanism": "MONGODB-X509"}
    assert names(server) == ([] if speculative else ["authenticate"])
    assert [u.name for u in server.sasl.authenticated_users] == [SUBJECT]


async def test_arbiters_are_not_authenticated(users: UserDirectory) -> None:
    server = FakeMongod(users, speculative=False, hello_extra={"arbiterOnly": True})
    await handshake(CredentialAuthenticator(negotiate("both", "both")), server)
    assert server.commands == []


async def test_deadline_is_passed_to_every_command(users: UserDirectory) -> None:
    server = FakeMongod(users, speculative=False)
    await handshake(CredentialAuthenticator(negotiate("both", "both")), server, deadline=123.0)
    assert server.deadlines == [123.0, 123.0]



@pytest.mark.parametrize("speculative", [True, False])
async def test_second_authentication_does_no_pbkdf2(
    users: UserDirectory, speculative: bool
) -> None:
    pbkdf2 = CountingPbkdf2()
    cache = ScramCache(pbkdf2=pbkdf2)
    credential = negotiate("both", "both")
    for _ in range(3):  # three connections, one authenticator each, one shared cache
        server = FakeMongod(users, speculative=speculative)
        await handshake(CredentialAuthenticator(credential, cache), server)
        assert len(server.sasl.authenticated_users) == 1
    assert pbkdf2.calls == 1
    assert cache.statistics().hits == 2


async def test_shared_authenticator_matches_speculative_replies_by_nonce(
    users: UserDirectory,
) -> None:
    """Two handshakes interleaved on one authenticator: each continues its own conversation."""
    nonces = (f"nonce{i}" for i in itertools.count())
    authenticator = CredentialAuthenticator(
        negotiate("both", "both"), nonce_factory=lambda: next(nonces)
    )
    first, second = FakeMongod(users), FakeMongod(users)
    reply_1 = first.hello({"speculativeAuthenticate": authenticator.speculative_document()})
    reply_2 = second.hello({"speculativeAuthenticate": authenticator.speculative_document()})
    assert "2 speculative pending" in repr(authenticator)
    await authenticator.authenticate(second, reply_2)
    await authenticator.authenticate(first, reply_1)
    assert names(first) == names(second) == ["saslContinue"]
    assert "0 speculative pending" in repr(authenticator)
    for server in (first, second):
        assert [u.name for u in server.sasl.authenticated_users] == ["both"]


async def test_unmatched_speculative_reply_falls_back_to_a_full_conversation(
    users: UserDirectory,
) -> None:
    server = FakeMongod(users)
    stranger = CredentialAuthenticator(negotiate("both", "both"))
    reply = server.hello({"speculativeAuthenticate": stranger.speculative_document()})
    authenticator = CredentialAuthenticator(negotiate("both", "both"))
    await authenticator.authenticate(server, reply)
    assert names(server) == ["saslStart", "saslContinue"]


async def test_password_saslprep_refuses_still_works_for_a_scram_sha_1_user(
    users: UserDirectory,
) -> None:
    """SCRAM-SHA-1 never SASLpreps: a negotiated credential skips the speculative SHA-256
    attempt instead of failing, and authenticates with SHA-1."""
    users.add_user("old", "pw\u0007", mechanisms=["SCRAM-SHA-1"])
    server = FakeMongod(users)
    hello = await handshake(CredentialAuthenticator(negotiate("old", "pw\u0007")), server)
    assert "speculativeAuthenticate" not in hello
    assert server.commands[0][1]["mechanism"] == "SCRAM-SHA-1"
    assert [u.name for u in server.sasl.authenticated_users] == ["old"]
    # With SCRAM-SHA-256 chosen (explicitly or negotiated), the refusal is a clear error.
    with pytest.raises(ConfigurationError, match="SASLprep"):
        await handshake(
            CredentialAuthenticator(MongoCredential("SCRAM-SHA-256", "admin", "x", "pw\u0007")),
            FakeMongod(users),
        )
    with pytest.raises(ConfigurationError, match="SASLprep"):
        await handshake(CredentialAuthenticator(negotiate("both", "pw\u0007")), FakeMongod(users))


@pytest.mark.parametrize(("user", "mechanism"), [("both", "SCRAM-SHA-256"),
                                                 ("sha1", "SCRAM-SHA-1")])
async def test_reauthenticate_runs_a_fresh_conversation_without_hello(
    users: UserDirectory, user: str, mechanism: str
) -> None:
    server = FakeMongod(users)
    authenticator = CredentialAuthenticator(negotiate(user, user))
    hello = {"saslSupportedMechs": users.sasl_supported_mechs(f"admin.{user}")}
    await authenticator.reauthenticate(server, hello)
    assert names(server) == ["saslStart", "saslContinue"]
    assert server.commands[0][1]["mechanism"] == mechanism
    assert [u.name for u in server.sasl.authenticated_users] == [user]


async def test_unusable_credential_is_a_configuration_error(users: UserDirectory) -> None:
    with pytest.raises(ConfigurationError, match="not supported"):
        await handshake(
            CredentialAuthenticator(MongoCredential("NOT-A-MECHANISM", "$external", "u")),
            FakeMongod(users),
        )


def test_repr_hides_the_password() -> None:
    authenticator = CredentialAuthenticator(negotiate("both", "s3cret"))
    assert "s3cret" not in repr(authenticator)
    assert "user='both'" in repr(authenticator) and "negotiated" in repr(authenticator)


# End to end: connect() over a real loopback socket, the scripted server playing a mongod.

HOST = HostInfo("Linux", "Linux", "x86_64", "6.1", "CPython 3.11", {})
SETTINGS = ConnectionSettings(host=HOST, connect_timeout=5.0)


def mongod_handler(users: UserDirectory, *, speculative: bool = True) -> Any:
    sessions: dict[int, SaslServer] = {}

    async def handler(request: Request, peer: Peer) -> None:
        sasl = sessions.setdefault(id(peer), SaslServer(users))
        command = {k: v for k, v in request.command.items() if k != "$db"}
        name = request.name.lower()
        if name in ("hello", "ismaster"):
            if not speculative:
                command.pop("speculativeAuthenticate", None)  # a pre-4.4 server ignores it
            reply = dict(HELLO_REPLY, **sasl.hello_fields(command))
        elif SaslServer.handles(request.name):
            reply = sasl.handle(request.db, command)
        elif sasl.authenticated_users:
            reply = {"ok": 1.0}
        else:
            reply = {"ok": 0.0, "errmsg": "requires authentication", "code": 13,
                     "codeName": "Unauthorized"}
        await peer.reply(request, reply)

    return handler


@pytest.mark.parametrize("speculative", [True, False])
@pytest.mark.parametrize(("user", "password"), [("both", "both"), ("sha1", "sha1")])
async def test_connect_authenticates_end_to_end(
    users: UserDirectory, speculative: bool, user: str, password: str
) -> None:
    async with ScriptedServer(mongod_handler(users, speculative=speculative)) as server:
        authenticator = CredentialAuthenticator(negotiate(user, password))
        conn = await connect(server.address, SETTINGS, id=1, authenticator=authenticator)
        try:
            assert await conn.command("admin", {"ping": 1}) == {"ok": 1.0}
        finally:
            await conn.aclose()
        sent = [r.name for r in server.requests]
        assert sent[0].lower() in ("hello", "ismaster") and sent[-1] == "ping"
        assert sent.count("saslStart") == (0 if speculative and user == "both" else 1)


async def test_connect_with_a_wrong_password_fails_and_closes(users: UserDirectory) -> None:
    async with ScriptedServer(mongod_handler(users)) as server:
        authenticator = CredentialAuthenticator(negotiate("both", "wrong"))
        with pytest.raises(OperationFailure) as info:
            await connect(server.address, SETTINGS, id=1, authenticator=authenticator)
        assert info.value.code == 18


def stalling_handler(users: UserDirectory, stalled: asyncio.Event) -> Any:
    """A mongod that never answers saslContinue (the request is read, no reply is sent)."""
    inner = mongod_handler(users, speculative=False)

    async def handler(request: Request, peer: Peer) -> None:
        if request.name == "saslContinue":
            stalled.set()
            return
        await inner(request, peer)

    return handler


async def _wait_for_eof(server: ScriptedServer) -> None:
    """The server side sees the client close its socket (the serve task ends)."""
    tasks = set(server._tasks)
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=2)
        assert not pending, "the client's socket is still open"


async def test_authentication_stalled_by_the_server_times_out(users: UserDirectory) -> None:
    stalled = asyncio.Event()
    async with ScriptedServer(stalling_handler(users, stalled)) as server:
        settings = ConnectionSettings(host=HOST, connect_timeout=0.3)
        authenticator = CredentialAuthenticator(negotiate("both", "both"))
        with pytest.raises(NetworkTimeout):
            await connect(server.address, settings, id=1, authenticator=authenticator)
        assert stalled.is_set()
        await _wait_for_eof(server)


async def test_cancelled_during_authentication_leaves_nothing_open(users: UserDirectory) -> None:
    stalled = asyncio.Event()
    async with ScriptedServer(stalling_handler(users, stalled)) as server:
        authenticator = CredentialAuthenticator(negotiate("both", "both"))
        task = asyncio.create_task(
            connect(server.address, SETTINGS, id=1, authenticator=authenticator)
        )
        await asyncio.wait_for(stalled.wait(), 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _wait_for_eof(server)


@pytest.mark.parametrize(
    ("user", "password", "expected"),
    [
        ("both", "both", ["saslContinue"]),  # speculative SCRAM-SHA-256
        ("sha1", "sha1", ["saslStart:SCRAM-SHA-1", "saslContinue"]),  # negotiated
        ("\u2168", "I\u00adV", ["saslContinue"]),
    ],
)
async def test_pymongo_client_authenticates_against_the_testing_server(
    users: UserDirectory, user: str, password: str, expected: list[str]
) -> None:
    """The independent client (PyMongo's AsyncMongoClient, its own handshake, speculative
    authentication and negotiation) accepts asyncmongo.testing.scram as a mongod."""
    async with ScriptedServer(mongod_handler(users)) as server:
        _, port = server.address
        uri = (
            f"mongodb://{quote(user)}:{quote(password)}@127.0.0.1:{port}/"
            "?directConnection=true&serverSelectionTimeoutMS=2000"
        )
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri)
        try:
            assert await client.admin.command("ping") == {"ok": 1.0}
        finally:
            await client.close()
        sasl = [
            f"{r.name}:{r.command['mechanism']}" if r.name == "saslStart" else r.name
            for r in server.requests
            if r.name.startswith("sasl")
        ]
        assert sasl == expected


async def test_pymongo_client_with_a_wrong_password_gets_code_18(users: UserDirectory) -> None:
    async with ScriptedServer(mongod_handler(users)) as server:
        _, port = server.address
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            f"mongodb://both:bad@127.0.0.1:{port}/?directConnection=true"
            "&serverSelectionTimeoutMS=2000"
        )
        try:
            with pytest.raises(PyMongoOperationFailure) as info:
                await client.admin.command("ping")
            assert info.value.code == 18
        finally:
            await client.close()
