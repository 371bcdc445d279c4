"""The auth spec's prose tests ("SCRAM-SHA-256 and mechanism negotiation", steps 1-4, and
"Minimum iteration count"), run through CredentialAuthenticator against the testing server
(no real mongod is available on the project's machines)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.core.auth.scram import ScramCache, ScramClient, ScramMechanism
from asyncmongo.errors import OperationFailure
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.testing.scram import SaslServer, UserDirectory

# Step 1: three users, one with only SHA-1, one with only SHA-256 and one with both; step 4:
# "IX" / "IX" and "\u2168" / "\u2163", SCRAM-SHA-256 only, created from the exact strings.
USERS = UserDirectory(iterations={ScramMechanism.SCRAM_SHA_1: 4096,
                                  ScramMechanism.SCRAM_SHA_256: 4096})
USERS.add_user("sha1", "sha1", mechanisms=["SCRAM-SHA-1"])
USERS.add_user("sha256", "sha256", mechanisms=["SCRAM-SHA-256"])
USERS.add_user("both", "both", mechanisms=["SCRAM-SHA-1", "SCRAM-SHA-256"])
USERS.add_user("IX", "IX", mechanisms=["SCRAM-SHA-256"])
USERS.add_user("\u2168", "\u2163", mechanisms=["SCRAM-SHA-256"])


class Mongod:
    """One connection to a 4.4+ mongod with those users."""

    def __init__(self) -> None:
        self.sasl = SaslServer(USERS)
        self.mechanisms: list[str] = []

    async def connect(self, credential: MongoCredential) -> None:
        authenticator = CredentialAuthenticator(credential, ScramCache())
        hello: dict[str, Any] = {"hello": 1}
        if authenticator.sasl_supported_mechs:
            hello["saslSupportedMechs"] = authenticator.sasl_supported_mechs
        speculative = authenticator.speculative_document()
        if speculative is not None:
            hello["speculativeAuthenticate"] = speculative
        reply = {"isWritablePrimary": True, "ok": 1.0, **self.sasl.hello_fields(hello)}
        if "speculativeAuthenticate" in reply and speculative is not None:
            self.mechanisms.append(speculative["mechanism"])
        await authenticator.authenticate(self, reply)

    async def command(
        self, db: str, command: Mapping[str, Any], *, deadline: float | None = None
    ) -> dict[str, Any]:
        if "saslStart" in command:
            self.mechanisms.append(command["mechanism"])
        return self.sasl.handle(db, command)

    def authenticated(self) -> list[str]:
        return [user.name for user in self.sasl.authenticated_users]


@pytest.mark.parametrize(
    ("user", "mechanism"),
    [
        ("sha1", "SCRAM-SHA-1"),
        ("sha256", "SCRAM-SHA-256"),
        ("both", "SCRAM-SHA-1"),
        ("both", "SCRAM-SHA-256"),
    ],
)
async def test_step_2_explicit_mechanism(user: str, mechanism: str) -> None:
    mongod = Mongod()
    await mongod.connect(MongoCredential(mechanism, "admin", user, user))
    assert mongod.authenticated() == [user]
    assert mongod.mechanisms == [mechanism]


@pytest.mark.parametrize(
    ("user", "negotiated"),
    [("sha1", "SCRAM-SHA-1"), ("sha256", "SCRAM-SHA-256"), ("both", "SCRAM-SHA-256")],
)
async def test_step_2_negotiated_mechanism(user: str, negotiated: str) -> None:
    mongod = Mongod()
    await mongod.connect(MongoCredential(None, "admin", user, user))
    assert mongod.authenticated() == [user]
    assert mongod.mechanisms[-1] == negotiated  # "both" must select SCRAM-SHA-256


@pytest.mark.parametrize(("user", "mechanism"), [("sha1", "SCRAM-SHA-256"),
                                                 ("sha256", "SCRAM-SHA-1")])
async def test_step_3_the_other_mechanism_fails(user: str, mechanism: str) -> None:
    mongod = Mongod()
    with pytest.raises(OperationFailure):
        await mongod.connect(MongoCredential(mechanism, "admin", user, user))
    assert mongod.authenticated() == []


async def test_step_3_unknown_user_fails_like_a_wrong_password() -> None:
    errors = []
    for user, password in (("unknown", "x"), ("both", "wrong")):
        with pytest.raises(OperationFailure) as info:
            await Mongod().connect(MongoCredential(None, "admin", user, password))
        errors.append((type(info.value), info.value.code))
    assert errors[0] == errors[1] == (OperationFailure, 18)


@pytest.mark.parametrize(
    ("user", "password"),
    [("IX", "IX"), ("IX", "I\u00adX"), ("\u2168", "IV"), ("\u2168", "I\u00adV")],
)
@pytest.mark.parametrize("mechanism", [None, "SCRAM-SHA-256"])
async def test_step_4_saslprep(user: str, password: str, mechanism: str | None) -> None:
    mongod = Mongod()
    await mongod.connect(MongoCredential(mechanism, "admin", user, password))
    assert mongod.authenticated() == [user]


@pytest.mark.parametrize("mechanism", [ScramMechanism.SCRAM_SHA_1, ScramMechanism.SCRAM_SHA_256])
def test_minimum_iteration_count(mechanism: ScramMechanism) -> None:
    client = ScramClient(mechanism, "user", b"pencil", nonce="abc")
    client.client_first()
    with pytest.raises(OperationFailure, match="iteration count"):
        client.client_final(b"r=abcdef,s=c2FsdA==,i=4095")
