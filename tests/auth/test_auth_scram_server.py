"""asyncmongo.testing.scram, the server side: what it stores, what it refuses, speculative
authentication, and PyMongo's own SCRAM client talking to it (the independent client)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import bson  # PyMongo's BSON: only as an independent peer in tests
import pytest
from pymongo.asynchronous import auth as pymongo_auth
from pymongo.auth_shared import _build_credentials_tuple
from pymongo.errors import OperationFailure as PyMongoOperationFailure

from asyncmongo.core.auth.conversation import ScramConversation
from asyncmongo.core.auth.scram import ScramCache, ScramMechanism
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.scram import SaslServer, StoredScramCredential, UserDirectory

FAST = {ScramMechanism.SCRAM_SHA_1: 4096, ScramMechanism.SCRAM_SHA_256: 4096}


@pytest.fixture
def users() -> UserDirectory:
    directory = UserDirectory(iterations=FAST)
    directory.add_user("both", "both")
    directory.add_user("sha256", "sha256", mechanisms=["SCRAM-SHA-256"])
    return directory


def test_users_are_stored_without_passwords() -> None:
    directory = UserDirectory(rng=lambda n: b"s" * n)
    user = directory.add_user("user", "pencil", iterations=4096)
    assert set(user.scram) == {"SCRAM-SHA-1", "SCRAM-SHA-256"}
    sha1 = user.scram["SCRAM-SHA-1"]
    assert (sha1.salt, sha1.iterations) == (b"s" * 16, 4096)
    assert len(user.scram["SCRAM-SHA-256"].salt) == 28
    # SCRAM-SHA-1 keys come from MongoDB's digest, so HEX(MD5(user:mongo:pencil)).
    assert sha1 == StoredScramCredential.create(
        ScramMechanism.SCRAM_SHA_1, "user", "pencil", salt=b"s" * 16, iterations=4096
    )
    assert "pencil" not in repr(user) and sha1.stored_key.hex() not in repr(user)
    assert UserDirectory().add_user("x", "y").scram["SCRAM-SHA-256"].iterations == 15000
    assert UserDirectory().add_user("x", "y").scram["SCRAM-SHA-1"].iterations == 10000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mechanisms": ["PLAIN"]}, "not a SCRAM mechanism"),
        ({"mechanisms": []}, "at least one"),
        ({"iterations": 4095}, "at least 4096"),
    ],
)
def test_bad_users_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        UserDirectory().add_user("u", "p", **kwargs)


def _start(server: SaslServer, nonce: str = "clientnonce") -> tuple[ScramConversation, Any]:
    conversation = ScramConversation(
        ScramMechanism.SCRAM_SHA_256, "admin", "both", "both", nonce=nonce, cache=ScramCache()
    )
    reply = server.handle("admin", conversation.first_command())
    return conversation, reply


def test_server_first_message_extends_the_client_nonce(users: UserDirectory) -> None:
    server = SaslServer(users, rng=lambda n: b"\x00" * n)
    _, reply = _start(server)
    assert reply["ok"] == 1 and reply["done"] is False and reply["conversationId"] == 1
    salt = base64.b64encode(users.get("admin", "both").scram["SCRAM-SHA-256"].salt)  # type: ignore[union-attr]
    expected = b"r=clientnonce" + base64.b64encode(b"\x00" * 24) + b",s=" + salt + b",i=4096"
    assert reply["payload"] == expected


def _client_final(server: SaslServer) -> tuple[dict[str, Any], Any]:
    conversation, reply = _start(server)
    command = conversation.step(reply)
    assert command is not None
    return command, reply


@pytest.mark.parametrize(
    "tamper",
    [
        lambda p: p.replace(b",p=", b",p=AAAA"),  # wrong proof
        lambda p: p[: p.index(b",p=")] + b",p=" + base64.b64encode(b"\x00" * 32),
        lambda p: p.replace(b"r=clientnonce", b"r=othernonce"),  # not the combined nonce
        lambda p: p.replace(b"c=biws", b"c=eSws"),  # channel binding flag changed
        lambda p: p[: p.index(b",p=")],  # no proof
        lambda p: p.replace(b",p=", b",p=!"),  # proof not base64
        lambda p: b"garbage",
    ],
)
def test_bad_client_final_is_authentication_failed(users: UserDirectory, tamper: Any) -> None:
    server = SaslServer(users)
    command, _ = _client_final(server)
    command["payload"] = tamper(command["payload"])
    reply = server.handle("admin", command)
    assert reply == {
        "ok": 0.0,
        "errmsg": "Authentication failed.",
        "code": 18,
        "codeName": "AuthenticationFailed",
    }
    assert server.authenticated_users == []
    # The conversation is gone after a failure.
    assert server.handle("admin", command)["code"] == 17


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ({"saslContinue": 1, "conversationId": 1, "payload": b""}, 17),
        ({"saslStart": 1, "mechanism": "GSSAPI", "payload": b""}, 334),
        ({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": b"n,,n=both"}, 18),
        ({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": b"p=tls,,n=both,r=x"}, 18),
        ({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": b"n,a=other,n=both,r=x"}, 18),
        ({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": b"n,,n=both"}, 18),
        ({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": 5}, 2),
        ({"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": "!!"}, 2),
        ({"saslStart": 1, "mechanism": "PLAIN", "payload": b"\x00a"}, 18),
        ({"authenticate": 1, "mechanism": "MONGODB-CR"}, 334),
        ({"ping": 1}, 59),
    ],
)
def test_bad_commands_get_mongod_errors(
    users: UserDirectory, command: Mapping[str, Any], code: int
) -> None:
    reply = SaslServer(users).handle("admin", command)
    assert reply["ok"] == 0 and reply["code"] == code and reply["codeName"]


def test_authzid_equal_to_the_user_and_base64_text_payloads_are_accepted(
    users: UserDirectory,
) -> None:
    server = SaslServer(users)
    text = base64.b64encode(b"n,a=both,n=both,r=abc").decode()
    reply = server.handle("admin", {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": text})
    assert reply["ok"] == 1


def test_speculative_authenticate(users: UserDirectory) -> None:
    server = SaslServer(users)
    conversation = ScramConversation(
        ScramMechanism.SCRAM_SHA_256, "admin", "both", "both", nonce="n0", cache=ScramCache()
    )
    document = conversation.speculative_document()
    assert document["db"] == "admin"
    reply = server.speculative_authenticate(document)
    assert reply is not None and "ok" not in reply and reply["done"] is False
    assert conversation.accepts_speculative(reply)
    command = conversation.resume(reply)
    assert command is not None
    assert conversation.step(server.handle("admin", command)) is None
    assert [u.name for u in server.authenticated_users] == ["both"]
    # Failures are silent: the field is left out and the client authenticates normally.
    bad = dict(document, payload=b"n,,n=nobody,r=x")
    assert SaslServer(users).speculative_authenticate(bad) is None
    assert SaslServer(users).speculative_authenticate({"saslStart": 1}) is None


def test_server_repr_summarises_state(users: UserDirectory) -> None:
    server = SaslServer(users)
    assert repr(server) == "<SaslServer idle, authenticated as []>"
    _start(server)
    assert repr(server) == "<SaslServer in conversation, authenticated as []>"
    assert repr(users) == "<UserDirectory 2 users>"


class PyMongoPeerConnection:
    """Just enough of PyMongo's AsyncConnection for its SCRAM code, every document going
    through PyMongo's BSON on the way in and out."""

    auth_ctx = None

    def __init__(self, server: SaslServer) -> None:
        self.server = server

    async def command(self, db: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        request = bson.decode(bson.encode(spec))
        reply = self.server.handle(db, request)
        decoded: dict[str, Any] = bson.decode(bson.encode(reply))
        if decoded["ok"] != 1:
            raise PyMongoOperationFailure(decoded["errmsg"], decoded["code"], decoded)
        return decoded


def _peer(server: SaslServer) -> Any:
    """A PyMongoPeerConnection typed as what PyMongo's SCRAM code declares it takes
    (its AsyncConnection), which the peer only imitates."""
    return PyMongoPeerConnection(server)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize(("user", "password"), [("both", "both"), ("\u2168", "I\u00adV")])
async def test_pymongo_scram_client_authenticates_against_our_server(
    users: UserDirectory, mechanism: str, user: str, password: str
) -> None:
    if user == "\u2168":
        users.add_user("\u2168", "\u2163")
    server = SaslServer(users)
    credentials = _build_credentials_tuple(mechanism, "admin", user, password, {}, None)
    if mechanism == "SCRAM-SHA-1" and user == "\u2168":
        # SCRAM-SHA-1 digests the password as given: only the exact password works.
        with pytest.raises(PyMongoOperationFailure):
            await pymongo_auth._authenticate_scram(
                credentials, _peer(server), mechanism
            )
        return
    await pymongo_auth._authenticate_scram(credentials, _peer(server), mechanism)
    assert [u.name for u in server.authenticated_users] == [user]


async def test_pymongo_wrong_password_gets_code_18(users: UserDirectory) -> None:
    credentials = _build_credentials_tuple("SCRAM-SHA-256", "admin", "both", "no", {}, None)
    with pytest.raises(PyMongoOperationFailure) as info:
        await pymongo_auth._authenticate_scram(
            credentials, _peer(SaslServer(users)), "SCRAM-SHA-256"
        )
    assert info.value.code == 18


def test_our_documents_survive_pymongos_bson(users: UserDirectory) -> None:
    """What we send is plain BSON (bytes → binary subtype 0) and what we parse is what a BSON
    decoder gives back."""
    server = SaslServer(users)
    conversation = ScramConversation(
        ScramMechanism.SCRAM_SHA_1, "admin", "both", "both", nonce="xyz", cache=ScramCache()
    )
    command: dict[str, Any] | None = conversation.first_command()
    while command is not None:
        raw = bson.encode(command)
        assert bson.decode(raw, bson.CodecOptions()) == command
        reply = bson.decode(bson.encode(server.handle("admin", bson.decode(raw))))
        command = conversation.step(reply)
    assert len(server.authenticated_users) == 1
