"""An authentication failure names the mechanism, the user (never the password) and where the
credentials are checked, and says what to check; the server's code and reply are kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.core.auth.failure import explain_failure
from asyncmongo.errors import OperationFailure
from asyncmongo.testing import Standalone
from asyncmongo.testing.scram import UserDirectory
from tests.support.certs import KEY_PASSWORD, generate

PASSWORD = "correct-horse"
WRONG = "battery-staple"


async def failure(uri: str, **kwargs: Any) -> OperationFailure:
    client: AsyncMongoClient[Any] = AsyncMongoClient(uri, serverSelectionTimeoutMS=3000, **kwargs)
    try:
        with pytest.raises(OperationFailure) as info:
            await client.admin.command("ping")
    finally:
        await client.close()
    return info.value


def host(uri: str) -> str:
    return uri.split("//", 1)[1].rstrip("/")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1", None])
async def test_scram(mechanism: str | None) -> None:
    async with Standalone(users={"alice": PASSWORD}) as db:
        extra = {"authMechanism": mechanism} if mechanism else {}
        error = await failure(f"mongodb://alice:{WRONG}@{host(db.uri)}/", **extra)
    message = str(error)
    assert message.startswith(
        f"{mechanism or 'SCRAM-SHA-256'} authentication failed for user 'alice' "
        "(authSource 'admin'): Authentication failed. (code 18 AuthenticationFailed). "
        "Check the username and password, and that the user was created in the authSource "
        "database ('admin')"
    )
    assert WRONG not in message and PASSWORD not in message
    assert error.code == 18 and error.details is not None
    assert error.details["codeName"] == "AuthenticationFailed"


async def test_plain() -> None:
    users = UserDirectory()
    users.add_plain_user("ldap-user", PASSWORD)
    async with Standalone(users=users) as db:
        error = await failure(
            f"mongodb://ldap-user:{WRONG}@{host(db.uri)}/?authMechanism=PLAIN"
        )
    message = str(error)
    assert message.startswith(
        "PLAIN authentication failed for user 'ldap-user' (authSource '$external'): "
        "Authentication failed. (code 18 AuthenticationFailed). Check the username and password"
    )
    assert WRONG not in message


async def test_x509_with_a_certificate_the_server_does_not_know(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    users = UserDirectory()
    users.add_x509_user("CN=someone-else")
    async with Standalone(users=users, tls=certs.server_context(require_client_cert=True)) as db:
        error = await failure(
            db.uri, tls=True, tlsCAFile=str(certs.ca), authMechanism="MONGODB-X509",
            tlsCertificateKeyFile=str(certs.client), tlsCertificateKeyFilePassword=KEY_PASSWORD,
        )
    message = str(error)
    assert message.startswith(
        "MONGODB-X509 authentication failed for the client certificate's subject "
        "(authSource '$external'): Authentication failed. (code 18 AuthenticationFailed). "
        "Check that the client certificate (tlsCertificateKeyFile)"
    )
    assert KEY_PASSWORD not in message


def test_other_errors_get_the_context_but_no_advice() -> None:
    credential = MongoCredential("SCRAM-SHA-256", "admin", "bob", "pw")
    server = OperationFailure("mechanism unavailable", 334,
                              {"ok": 0, "errmsg": "mechanism unavailable", "code": 334,
                               "codeName": "MechanismUnavailable"}, ["SomeLabel"])
    explained = explain_failure(server, "SCRAM-SHA-256", credential, None)
    assert explained.args[0] == (
        "SCRAM-SHA-256 authentication failed for user 'bob' (authSource 'admin'): "
        "mechanism unavailable (code 334 MechanismUnavailable)"
    )
    assert explained.code == 334 and explained.details is server.details
    assert explained.error_labels == frozenset({"SomeLabel"})
    client_side = explain_failure(OperationFailure("the server signature is invalid"),
                                  "SCRAM-SHA-1", credential, None)
    assert client_side.args[0].endswith(": the server signature is invalid")
    aws = explain_failure(OperationFailure("x", 18, {"errmsg": "Authentication failed."}),
                          "MONGODB-AWS", MongoCredential("MONGODB-AWS", "$external"),
                          "the ECS container endpoint", "ASIAKEY")
    assert aws.args[0].startswith(
        "MONGODB-AWS authentication failed for access key ID 'ASIAKEY' (credentials from the "
        "ECS container endpoint): Authentication failed. (code 18)"
    )
