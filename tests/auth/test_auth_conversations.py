"""Whole conversations: the pure client conversations against asyncmongo.testing.scram's
server, the command documents themselves, negotiation and the long (pre-4.4) exchange."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from asyncmongo.core.auth.conversation import Conversation, ScramConversation
from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.core.auth.negotiation import (
    negotiated_mechanism,
    new_conversation,
    sasl_supported_mechs_query,
    speculative_mechanism,
)
from asyncmongo.core.auth.plain import PlainConversation, plain_payload
from asyncmongo.core.auth.sasl import parse_sasl_reply, sasl_continue_command, sasl_start_command
from asyncmongo.core.auth.scram import ScramCache, ScramMechanism
from asyncmongo.core.auth.x509 import X509Conversation, x509_authenticate_command
from asyncmongo.errors import ConfigurationError, InvalidOperation, OperationFailure
from asyncmongo.testing.scram import SaslServer, UserDirectory

SUBJECT = "C=IS,ST=Reykjavik,L=Reykjavik,O=MongoDB,OU=Drivers,CN=client"


def counter_rng() -> Callable[[int], bytes]:
    """Deterministic 'randomness' for the server."""
    counter = itertools.count()
    return lambda n: bytes((next(counter) + i) % 256 for i in range(n))


@pytest.fixture
def users() -> UserDirectory:
    directory = UserDirectory(rng=counter_rng(), iterations={
        ScramMechanism.SCRAM_SHA_1: 4096, ScramMechanism.SCRAM_SHA_256: 4096,
    })
    directory.add_user("both", "both")
    directory.add_user("sha1", "sha1", mechanisms=["SCRAM-SHA-1"])
    directory.add_user("sha256", "sha256", mechanisms=["SCRAM-SHA-256"])
    directory.add_user("IX", "IX", mechanisms=["SCRAM-SHA-256"])
    directory.add_user("\u2168", "\u2163", mechanisms=["SCRAM-SHA-256"])
    directory.add_user("app", "secret", db="appdb")
    directory.add_plain_user("ldapuser", "ldappass")
    directory.add_x509_user(SUBJECT)
    return directory


def run(conversation: Conversation, server: SaslServer, **kw: Any) -> list[dict[str, Any]]:
    """Drive a conversation to its end; return the commands sent."""
    sent = []
    command: dict[str, Any] | None = conversation.first_command()
    while command is not None:
        sent.append(command)
        command = conversation.step(server.handle(conversation.source, command, **kw))
    return sent


def scram(mechanism: str, user: str, password: str, source: str = "admin") -> Conversation:
    credential = MongoCredential(mechanism, source, user, password)
    return new_conversation(mechanism, credential, ScramCache())


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-1", "both", "both"),
        ("SCRAM-SHA-256", "both", "both"),
        ("SCRAM-SHA-1", "sha1", "sha1"),
        ("SCRAM-SHA-256", "sha256", "sha256"),
        # Auth spec test plan, step 4: SASLprep of the password, not of the username.
        ("SCRAM-SHA-256", "IX", "IX"),
        ("SCRAM-SHA-256", "IX", "I\u00adX"),
        ("SCRAM-SHA-256", "\u2168", "IV"),
        ("SCRAM-SHA-256", "\u2168", "I\u00adV"),
    ],
)
def test_scram_conversation_with_the_server(
    users: UserDirectory, mechanism: str, user: str, password: str
) -> None:
    server = SaslServer(users, rng=counter_rng())
    sent = run(scram(mechanism, user, password), server)
    assert [next(iter(c)) for c in sent] == ["saslStart", "saslContinue"]  # short exchange
    assert [u.name for u in server.authenticated_users] == [user]


def test_scram_documents_are_the_specs(users: UserDirectory) -> None:
    conversation = ScramConversation(
        ScramMechanism.SCRAM_SHA_256, "admin", "both", "both", nonce="abc", cache=ScramCache()
    )
    first = conversation.first_command()
    assert first == {
        "saslStart": 1,
        "mechanism": "SCRAM-SHA-256",
        "payload": b"n,,n=both,r=abc",
        "autoAuthorize": 1,
        "options": {"skipEmptyExchange": True},
    }
    server = SaslServer(users)
    reply = server.handle("admin", first)
    second = conversation.step(reply)
    assert second is not None
    assert list(second) == ["saslContinue", "conversationId", "payload"]
    assert second["conversationId"] == reply["conversationId"]
    assert second["payload"].startswith(b"c=biws,r=abc")
    assert conversation.step(server.handle("admin", second)) is None
    with pytest.raises(InvalidOperation):
        conversation.step(reply)
    with pytest.raises(InvalidOperation):
        conversation.first_command()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_scram_long_conversation_without_skip_empty_exchange(
    users: UserDirectory, mechanism: str
) -> None:
    """Pre-4.4 servers ignore skipEmptyExchange: one more empty saslContinue."""
    server = SaslServer(users)
    conversation = scram(mechanism, "both", "both")
    first = conversation.first_command()
    del first["options"]  # what such a server effectively sees
    second = conversation.step(server.handle("admin", first))
    assert second is not None
    reply = server.handle("admin", second)
    assert reply["done"] is False
    third = conversation.step(reply)
    assert third == sasl_continue_command(reply["conversationId"], b"")
    assert conversation.step(server.handle("admin", third)) is None
    assert len(server.authenticated_users) == 1


def test_scram_conversation_source_is_the_users_database(users: UserDirectory) -> None:
    server = SaslServer(users)
    run(scram("SCRAM-SHA-256", "app", "secret", source="appdb"), server)
    assert [(u.db, u.name) for u in server.authenticated_users] == [("appdb", "app")]
    with pytest.raises(OperationFailure) as info:
        run(scram("SCRAM-SHA-256", "app", "secret", source="admin"), SaslServer(users))
    assert info.value.code == 18


@pytest.mark.parametrize(
    ("mechanism", "user", "password", "code"),
    [
        ("SCRAM-SHA-256", "both", "wrong", 18),
        ("SCRAM-SHA-1", "both", "wrong", 18),
        ("SCRAM-SHA-256", "nobody", "x", 18),
        ("SCRAM-SHA-1", "nobody", "x", 18),
        # Auth spec test plan, step 3: the mechanism the user does not have fails.
        ("SCRAM-SHA-256", "sha1", "sha1", 334),
        ("SCRAM-SHA-1", "sha256", "sha256", 334),
    ],
)
def test_scram_refusals_keep_the_servers_code(
    users: UserDirectory, mechanism: str, user: str, password: str, code: int
) -> None:
    server = SaslServer(users)
    with pytest.raises(OperationFailure) as info:
        run(scram(mechanism, user, password), server)
    assert info.value.code == code
    assert server.authenticated_users == []


def test_scram_early_done_is_refused(users: UserDirectory) -> None:
    conversation = scram("SCRAM-SHA-256", "both", "both")
    conversation.first_command()
    with pytest.raises(OperationFailure, match="too early"):
        conversation.step({"ok": 1, "conversationId": 1, "done": True, "payload": b""})


def test_scram_server_that_never_finishes_is_refused(users: UserDirectory) -> None:
    server = SaslServer(users)
    conversation = scram("SCRAM-SHA-256", "both", "both")
    first = conversation.first_command()
    del first["options"]
    second = conversation.step(server.handle("admin", first))
    assert second is not None
    third = conversation.step(server.handle("admin", second))
    assert third is not None
    with pytest.raises(OperationFailure, match="did not finish"):
        conversation.step({"ok": 1, "conversationId": 1, "done": False, "payload": b""})


def test_forged_server_signature_is_refused(users: UserDirectory) -> None:
    server = SaslServer(users)
    conversation = scram("SCRAM-SHA-256", "both", "both")
    second = conversation.step(server.handle("admin", conversation.first_command()))
    assert second is not None
    reply = dict(server.handle("admin", second))
    reply["payload"] = b"v=" + base64.b64encode(b"\x01" * 32)
    with pytest.raises(OperationFailure, match="invalid signature"):
        conversation.step(reply)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"ok": 0, "errmsg": "Authentication failed.", "code": 18}, "Authentication failed"),
        ({"ok": 0}, "authentication failed"),
        ({"ok": 1, "conversationId": 1, "done": False, "payload": "text"}, "not binary"),
        ({"ok": 1, "done": False, "payload": b"r=abcdef"}, "conversationId"),
        ({"ok": 1, "conversationId": 1, "done": 0, "payload": b"x"}, "boolean"),
    ],
)
def test_bad_sasl_replies_are_operation_failures(reply: Mapping[str, Any], message: str) -> None:
    with pytest.raises(OperationFailure, match=message):
        parse_sasl_reply(reply)


def test_sasl_command_documents() -> None:
    assert sasl_start_command("PLAIN", b"x") == {
        "saslStart": 1, "mechanism": "PLAIN", "payload": b"x", "autoAuthorize": 1,
    }
    assert sasl_continue_command(7, b"y") == {
        "saslContinue": 1, "conversationId": 7, "payload": b"y",
    }


def test_plain_conversation(users: UserDirectory) -> None:
    credential = MongoCredential("PLAIN", "$external", "ldapuser", "ldappass")
    conversation = new_conversation("PLAIN", credential, ScramCache())
    assert conversation.source == "$external"
    assert conversation.speculative_document() is None
    server = SaslServer(users)
    sent = run(conversation, server)
    # Auth spec PLAIN example: "user"/"pencil" is AHVzZXIAcGVuY2ls.
    assert base64.b64encode(plain_payload("user", "pencil")) == b"AHVzZXIAcGVuY2ls"
    assert sent == [sasl_start_command("PLAIN", b"\x00ldapuser\x00ldappass")]
    assert [u.name for u in server.authenticated_users] == ["ldapuser"]
    wrong = PlainConversation("$external", "ldapuser", "nope")
    with pytest.raises(OperationFailure) as info:
        run(wrong, SaslServer(users))
    assert info.value.code == 18


def test_plain_server_that_does_not_finish_is_refused() -> None:
    conversation = PlainConversation("$external", "u", "p")
    conversation.first_command()
    with pytest.raises(OperationFailure, match="did not finish"):
        conversation.step({"ok": 1, "conversationId": 1, "done": False, "payload": b""})


def test_x509_conversation(users: UserDirectory) -> None:
    assert x509_authenticate_command(None) == {"authenticate": 1, "mechanism": "MONGODB-X509"}
    assert x509_authenticate_command(SUBJECT)["user"] == SUBJECT
    for username in (None, SUBJECT):
        server = SaslServer(users)
        run(X509Conversation(username), server, peer_subject=SUBJECT)
        assert [u.name for u in server.authenticated_users] == [SUBJECT]
    with pytest.raises(OperationFailure) as info:
        run(X509Conversation("CN=someone else"), SaslServer(users), peer_subject=SUBJECT)
    assert info.value.code == 18
    with pytest.raises(OperationFailure):
        run(X509Conversation(None), SaslServer(users), peer_subject=None)
    with pytest.raises(ConfigurationError, match="no password"):
        new_conversation("MONGODB-X509", MongoCredential("MONGODB-X509", "$external", None, "pw"),
                         ScramCache())


@pytest.mark.parametrize(
    ("mechanisms", "expected"),
    [
        (["SCRAM-SHA-1", "SCRAM-SHA-256"], "SCRAM-SHA-256"),
        (["SCRAM-SHA-256"], "SCRAM-SHA-256"),
        (["SCRAM-SHA-1"], "SCRAM-SHA-1"),
        ([], "SCRAM-SHA-1"),
        (["PLAIN"], "SCRAM-SHA-1"),  # never negotiate anything but SCRAM
        (["SCRAM-SHA-1", "SOMETHING-NEW"], "SCRAM-SHA-1"),  # unknown names are no error
        (None, "SCRAM-SHA-1"),  # field absent
    ],
)
def test_negotiation_from_sasl_supported_mechs(
    mechanisms: list[str] | None, expected: str
) -> None:
    credential = MongoCredential(None, "admin", "user", "pw")
    hello = {} if mechanisms is None else {"saslSupportedMechs": mechanisms}
    assert negotiated_mechanism(credential, hello) == expected


def test_a_given_mechanism_is_honoured() -> None:
    credential = MongoCredential("SCRAM-SHA-1", "admin", "user", "pw")
    assert negotiated_mechanism(credential, {"saslSupportedMechs": ["SCRAM-SHA-256"]}) == (
        "SCRAM-SHA-1"
    )
    assert sasl_supported_mechs_query(credential) is None
    assert speculative_mechanism(credential) == "SCRAM-SHA-1"


def test_negotiation_query_and_speculative_mechanism() -> None:
    negotiate = MongoCredential(None, "db", "\u2168", "pw")
    assert sasl_supported_mechs_query(negotiate) == "db.\u2168"  # username not SASLprep'ed
    assert speculative_mechanism(negotiate) == "SCRAM-SHA-256"
    assert speculative_mechanism(MongoCredential("PLAIN", "$external", "u", "p")) is None
    assert speculative_mechanism(MongoCredential("MONGODB-X509", "$external")) == "MONGODB-X509"
    assert speculative_mechanism(MongoCredential("GSSAPI", "$external", "u")) is None


def test_users_supported_mechs(users: UserDirectory) -> None:
    assert users.sasl_supported_mechs("admin.both") == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert users.sasl_supported_mechs("admin.sha256") == ["SCRAM-SHA-256"]
    assert users.sasl_supported_mechs("admin.nobody") is None
    assert users.sasl_supported_mechs("nodot") is None
    assert users.sasl_supported_mechs("$external.ldapuser") == ["PLAIN"]


@pytest.mark.parametrize(
    ("mechanism", "credential", "message"),
    [
        ("SCRAM-SHA-256", MongoCredential(None, "admin", None, "pw"), "needs a username"),
        ("SCRAM-SHA-256", MongoCredential(None, "admin", "", "pw"), "needs a username"),
        ("SCRAM-SHA-1", MongoCredential(None, "admin", "u", None), "needs a password"),
        ("PLAIN", MongoCredential("PLAIN", "$external", "u", None), "needs a password"),
        ("GSSAPI", MongoCredential("GSSAPI", "$external", "u"), "not supported"),
        ("MONGODB-AWS", MongoCredential("MONGODB-AWS", "$external"), "not supported"),
        ("SCRAM-SHA-256", MongoCredential(None, "admin", "u", "bad\u0007"), "SASLprep"),
    ],
)
def test_unusable_credentials_are_configuration_errors(
    mechanism: str, credential: MongoCredential, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        new_conversation(mechanism, credential, ScramCache())
