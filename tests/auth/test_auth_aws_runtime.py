"""MONGODB-AWS through CredentialAuthenticator, against a fake connection that plays the
server's side: it checks the client nonce, answers a server nonce and STS host, and verifies
the SigV4 signature of the STS request with the secret it knows, as STS would."""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncmongo.bson.codec import decode, encode
from asyncmongo.core.auth.credential import build_credential
from asyncmongo.core.auth.sigv4 import AwsCredentials, sign
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.aws_credentials import fetch_aws_credentials
from tests.auth.support import closed_port

SECRETS = {"AKIDTEST": "test-secret"}
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/sts/"
    r"aws4_request, SignedHeaders=(?P<signed>[^,]+), Signature=[0-9a-f]{64}"
)


class FakeAwsServer:
    """The server half of the conversation (the STS check done locally)."""

    def __init__(self, host: str = "sts.us-west-2.amazonaws.com") -> None:
        self.host = host
        self.nonce = b""
        self.identities: list[str] = []

    async def command(
        self, db: str, command: Mapping[str, Any], *, deadline: float | None = None
    ) -> Mapping[str, Any]:
        assert db == "$external"
        payload = decode(command["payload"])
        if "saslStart" in command:
            assert command["mechanism"] == "MONGODB-AWS"
            assert payload["p"] == 110 and len(payload["r"]) == 32
            self.nonce = payload["r"] + secrets.token_bytes(32)
            return {"ok": 1, "conversationId": 7, "done": False,
                    "payload": encode({"s": self.nonce, "h": self.host})}
        assert command["conversationId"] == 7
        return self._verify(payload)

    def _verify(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        match = _AUTH.fullmatch(message["a"])
        if match is None or match["key"] not in SECRETS:
            return {"ok": 0, "code": 18, "errmsg": "Authentication failed."}
        credentials = AwsCredentials(match["key"], SECRETS[match["key"]], message.get("t"))
        expected = sign(
            credentials, method="POST", host=self.host, region=match["region"], service="sts",
            headers={
                "Content-Type": "application/x-www-form-urlencoded", "Content-Length": "43",
                "X-MongoDB-Server-Nonce": base64.b64encode(self.nonce).decode(),
                "X-MongoDB-GS2-CB-Flag": "n",
            },
            body=b"Action=GetCallerIdentity&Version=2011-06-15",
            now=datetime.strptime(message["d"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC),
        )
        if expected.authorization != message["a"]:
            return {"ok": 0, "code": 18, "errmsg": "Authentication failed."}
        self.identities.append(match["key"])
        return {"ok": 1, "conversationId": 7, "done": True, "payload": b""}


def aws_authenticator() -> CredentialAuthenticator:
    credential = build_credential(
        mechanism="MONGODB-AWS", username=None, password=None, source=None, database=None,
        mechanism_properties=None, userinfo_given=False,
    )
    assert credential is not None
    return CredentialAuthenticator(credential)


async def test_environment_credentials_authenticate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session")
    server = FakeAwsServer()
    authenticator = aws_authenticator()
    assert authenticator.speculative_document() is None
    await authenticator.authenticate(server, {"ok": 1})
    assert server.identities == ["AKIDTEST"]


async def test_the_environment_is_read_for_every_authentication(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    authenticator = aws_authenticator()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(OperationFailure, match="Authentication failed"):
        await authenticator.authenticate(FakeAwsServer(), {"ok": 1})
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")  # refreshed by the application
    await authenticator.authenticate(FakeAwsServer(), {"ok": 1})


async def test_no_credentials_names_every_source(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/half")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(OperationFailure) as info:
        await aws_authenticator().authenticate(FakeAwsServer(), {"ok": 1})
    message = str(info.value)
    for expected in ("no AWS credentials found", "AWS_CREDENTIAL_PROVIDER",
                     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set",
                     "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set",
                     "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "EC2 instance metadata"):
        assert expected in message


async def test_a_provider_that_is_not_callable_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="AWS_CREDENTIAL_PROVIDER must be callable"):
        await fetch_aws_credentials({"AWS_CREDENTIAL_PROVIDER": object()}, environ={})
