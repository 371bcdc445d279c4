"""GSSAPI (Kerberos) authentication.

The conversation is tested on its own with a scripted security context; end to end, the driver
authenticates against the simulated server, which verifies the Kerberos tokens with its service
keytab, in a throwaway realm whose KDC (MIT krb5kdc) runs on 127.0.0.1. Where the KDC tools or
the ``gssapi`` package are missing, the end-to-end tests skip and say which.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.auth.gssapi import (
    GssapiConversation,
    canonicalize_mode,
    service_principal,
)
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.runtime.gssapi import canonical_host
from asyncmongo.testing import Standalone
from asyncmongo.testing.kdc import KerberosRealm, kdc_unavailable_reason
from asyncmongo.testing.scram import SaslServer, UserDirectory

# --- the conversation, with a scripted context ----------------------------------------------


@dataclass
class ScriptedContext:
    """Completes after ``rounds`` steps; wraps by prefixing ``W:``."""

    rounds: int = 2
    steps: list[bytes] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return len(self.steps) >= self.rounds

    def step(self, token: bytes) -> bytes | None:
        self.steps.append(token)
        return b"" if self.complete else f"token{len(self.steps)}".encode()

    def wrap(self, message: bytes) -> bytes:
        return b"W:" + message

    def unwrap(self, message: bytes) -> bytes:
        assert message.startswith(b"W:")
        return message[2:]


def reply(payload: bytes, *, done: bool = False) -> dict[str, Any]:
    return {"ok": 1.0, "conversationId": 7, "done": done, "payload": payload}


def test_the_conversation_establishes_then_answers_the_offer() -> None:
    context = ScriptedContext(rounds=2)
    conversation = GssapiConversation(context, "alice@R")
    first = conversation.first_command()
    assert first["saslStart"] == 1 and first["mechanism"] == "GSSAPI"
    assert first["payload"] == b"token1" and conversation.source == "$external"
    second = conversation.step(reply(b"server-token"))
    assert second == {"saslContinue": 1, "conversationId": 7, "payload": b""}
    assert context.steps == [b"", b"server-token"]
    # The context is complete: the next payload is the wrapped security layer offer.
    answer = conversation.step(reply(b"W:\x01\x00\x10\x00"))
    assert answer is not None and answer["payload"] == b"W:\x01\x00\x00\x00alice@R"
    assert conversation.step(reply(b"", done=True)) is None


def test_an_offer_without_the_no_layer_option_is_refused() -> None:
    conversation = GssapiConversation(ScriptedContext(rounds=1), "alice@R")
    conversation.first_command()
    with pytest.raises(OperationFailure, match="no security layer"):
        conversation.step(reply(b"W:\x04\x00\x00\x00"))


def test_a_server_ending_early_is_an_error() -> None:
    conversation = GssapiConversation(ScriptedContext(rounds=3), "alice@R")
    conversation.first_command()
    with pytest.raises(OperationFailure, match="ended the conversation while establishing"):
        conversation.step(reply(b"", done=True))


def test_a_context_that_never_completes_is_bounded() -> None:
    conversation = GssapiConversation(ScriptedContext(rounds=1000), "alice@R")
    conversation.first_command()
    with pytest.raises(OperationFailure, match="no security context after"):
        for _ in range(20):
            conversation.step(reply(b"more"))


@pytest.mark.parametrize(
    ("properties", "host", "expected"),
    [
        ({}, "db.example.com", ("mongodb@db.example.com", False)),
        ({"SERVICE_NAME": "mongo"}, "h", ("mongo@h", False)),
        ({"SERVICE_HOST": "other"}, "h", ("mongodb@other", False)),
        ({"SERVICE_REALM": "B.ORG"}, "h", ("mongodb/h@B.ORG", True)),
    ],
)
def test_service_principal(properties: dict[str, Any], host: str,
                           expected: tuple[str, bool]) -> None:
    assert service_principal(properties, host) == expected


@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, "none"), ("none", "none"), (False, "none"), ("false", "none"), (True,
     "forwardAndReverse"), ("true", "forwardAndReverse"), ("forward", "forward")],
)
def test_canonicalize_mode(value: object, mode: str) -> None:
    properties = {} if value is None else {"CANONICALIZE_HOST_NAME": value}
    assert canonicalize_mode(properties) == mode


async def test_canonical_host() -> None:
    assert await canonical_host("127.0.0.1", "none") == "127.0.0.1"
    reverse = socket.gethostbyaddr("127.0.0.1")[0].lower()
    assert await canonical_host("127.0.0.1", "forwardAndReverse") == reverse
    # Spec: a lookup that fails falls back to the host as given.
    assert await canonical_host("no-such-host.invalid", "forward") == "no-such-host.invalid"
    assert await canonical_host("no-such-host.invalid", "forwardAndReverse") == (
        "no-such-host.invalid")


def test_a_server_without_kerberos_refuses_the_mechanism() -> None:
    sasl = SaslServer(UserDirectory())
    answer = sasl.handle("$external", {"saslStart": 1, "mechanism": "GSSAPI", "payload": b""})
    assert answer["ok"] == 0 and answer["code"] == 334


# --- end to end, against a real KDC ----------------------------------------------------------

_SKIP = kdc_unavailable_reason() or (
    None if importlib.util.find_spec("gssapi") else
    "the gssapi package is not installed (pip install 'asyncmongo[gssapi]', which needs "
    "libkrb5-dev)")
kerberos = pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")

PASSWORD = "alice-secret"


@dataclass
class Kerberized:
    realm: KerberosRealm
    mongod: Standalone
    users: UserDirectory

    def uri(self, *, password: bool = True, user: str = "alice", **props: str) -> str:
        principal = quote(f"{user}@{self.realm.name}", safe="")
        secret = f":{PASSWORD}" if password else ""
        properties = ",".join(f"{k}:{v}" for k, v in props.items())
        extra = f"&authMechanismProperties={properties}" if props else ""
        port = self.mongod.server.port
        return (f"mongodb://{principal}{secret}@127.0.0.1:{port}/?authMechanism=GSSAPI"
                f"&serverSelectionTimeoutMS=5000{extra}")


@pytest.fixture
def realm_environment() -> Iterator[dict[str, str]]:
    saved = {name: os.environ.get(name) for name in ("KRB5_CONFIG", "KRB5CCNAME")}
    environment: dict[str, str] = {}
    yield environment
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


async def kerberized(environment: dict[str, str], *services: tuple[str, str],
                     ) -> AsyncIterator[Kerberized]:
    async with KerberosRealm() as realm:
        await realm.add_principal("alice", password=PASSWORD)
        await realm.add_principal("mallory", password="mallory-secret")
        keytab: Path | None = None
        for service, host in services or (("mongodb", "127.0.0.1"),):
            keytab = await realm.add_service(service, host)
        assert keytab is not None
        os.environ.update(realm.environment)
        environment.update(realm.environment)
        users = UserDirectory()
        users.enable_gssapi(keytab)
        users.add_gssapi_user(f"alice@{realm.name}")
        async with Standalone(users=users) as mongod:
            yield Kerberized(realm, mongod, users)


@pytest.fixture
async def kdc(realm_environment: dict[str, str]) -> AsyncIterator[Kerberized]:
    async for deployment in kerberized(realm_environment):
        yield deployment


async def authenticated_as(uri: str) -> None:
    async with AsyncMongoClient(uri) as client:
        await client.test.c.insert_one({"x": 1})  # needs an authenticated user
        status = await client.admin.command("connectionStatus")
    users = status["authInfo"]["authenticatedUsers"]
    assert [u["user"] for u in users] == ["alice@ASYNCMONGO.TEST"]
    assert [u["db"] for u in users] == ["$external"]


@kerberos
async def test_with_a_password(kdc: Kerberized) -> None:
    await authenticated_as(kdc.uri())


@kerberos
async def test_with_a_ticket_from_kinit(kdc: Kerberized) -> None:
    await kdc.realm.kinit("alice", PASSWORD)
    await authenticated_as(kdc.uri(password=False))


@kerberos
async def test_without_a_ticket_the_error_says_what_to_check(kdc: Kerberized) -> None:
    async with AsyncMongoClient(kdc.uri(password=False)) as client:
        with pytest.raises(OperationFailure) as caught:
            await client.admin.command("ping")
    message = str(caught.value)
    assert "GSSAPI" in message and "alice@ASYNCMONGO.TEST" in message and "kinit" in message


@kerberos
async def test_a_wrong_password_fails_without_showing_it(kdc: Kerberized) -> None:
    uri = kdc.uri().replace(PASSWORD, "not-the-password")
    async with AsyncMongoClient(uri) as client:
        with pytest.raises(OperationFailure) as caught:
            await client.admin.command("ping")
    assert "not-the-password" not in str(caught.value)
    assert "alice@ASYNCMONGO.TEST" in str(caught.value)


@kerberos
async def test_a_principal_without_a_user_is_refused_by_the_server(kdc: Kerberized) -> None:
    uri = kdc.uri(user="mallory").replace(PASSWORD, "mallory-secret")
    async with AsyncMongoClient(uri) as client:
        with pytest.raises(OperationFailure) as caught:
            await client.admin.command("ping")
    assert caught.value.code == 18


@kerberos
async def test_service_name(realm_environment: dict[str, str]) -> None:
    async for kdc in kerberized(realm_environment, ("mongo", "127.0.0.1")):
        await authenticated_as(kdc.uri(SERVICE_NAME="mongo"))
        with pytest.raises(OperationFailure, match=r"mongodb@127\.0\.0\.1"):
            await authenticated_as(kdc.uri())  # the keytab has no mongodb/127.0.0.1


@kerberos
async def test_service_host_and_realm(realm_environment: dict[str, str]) -> None:
    async for kdc in kerberized(realm_environment, ("mongodb", "db.internal")):
        await authenticated_as(kdc.uri(SERVICE_HOST="db.internal"))
        await authenticated_as(
            kdc.uri(SERVICE_HOST="db.internal", SERVICE_REALM=kdc.realm.name))


@kerberos
async def test_canonicalize_host_name(realm_environment: dict[str, str]) -> None:
    reverse = socket.gethostbyaddr("127.0.0.1")[0].lower()
    async for kdc in kerberized(realm_environment, ("mongodb", reverse)):
        # The URI names 127.0.0.1; only the reverse name's principal exists.
        await authenticated_as(kdc.uri(CANONICALIZE_HOST_NAME="forwardAndReverse"))
        with pytest.raises(OperationFailure):
            await authenticated_as(kdc.uri(CANONICALIZE_HOST_NAME="none"))


@kerberos
@pytest.mark.skipif(importlib.util.find_spec("kerberos") is None,
                    reason="PyMongo's GSSAPI needs the pykerberos package, not installed")
async def test_pymongo_authenticates_against_the_simulator(kdc: Kerberized) -> None:
    """The simulator's Kerberos side is faithful: PyMongo (through pykerberos) gets in too."""
    pymongo = pytest.importorskip("pymongo")
    await kdc.realm.kinit("alice", PASSWORD)
    client: Any = pymongo.AsyncMongoClient(kdc.uri(password=False))
    try:
        status = await client.admin.command("connectionStatus")
    finally:
        await client.close()
    assert status["authInfo"]["authenticatedUsers"][0]["user"] == "alice@ASYNCMONGO.TEST"


def test_the_gssapi_package_is_asked_for_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from asyncmongo.runtime import gssapi as runtime_gssapi

    monkeypatch.setitem(sys.modules, "gssapi", None)
    with pytest.raises(ConfigurationError, match=r"asyncmongo\[gssapi\]"):
        runtime_gssapi._import_gssapi()
