"""MONGODB-AWS (auth spec): the SASL conversation and the credential sources' data, pure.

The conversation: the client sends a 32-byte nonce (``r``) and the gs2-cb-flag ``n``
(``p: 110``); the server answers a 64-byte nonce starting with the client's (``s``) and the
STS host (``h``); the client answers the SigV4 ``Authorization`` header (``a``), its
``X-Amz-Date`` (``d``) and, for temporary credentials, the session token (``t``) of a signed
STS ``GetCallerIdentity`` request, which the server replays to STS. The nonce and the time
come in as arguments.

Credentials never come from the connection string (the credential rules refuse a username or
password); :func:`credentials_from_environment` reads ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN`` from a mapping the caller passes (read
afresh for every authentication, as the spec asks), and the ``parse_*`` functions read the
JSON the other sources (AssumeRoleWithWebIdentity, the ECS and EC2 endpoints) answer.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from asyncmongo.bson.codec import decode, encode
from asyncmongo.core.auth.sasl import parse_sasl_reply, sasl_continue_command, sasl_start_command
from asyncmongo.core.auth.sigv4 import AwsCredentials, sign
from asyncmongo.errors import ConfigurationError, InvalidOperation, OperationFailure

__all__ = [
    "MONGODB_AWS",
    "AwsConversation",
    "credentials_from_environment",
    "parse_credentials_document",
    "sts_region",
]

MONGODB_AWS = "MONGODB-AWS"
NONCE_SIZE = 32
GS2_CB_FLAG = ord("n")
STS_BODY = b"Action=GetCallerIdentity&Version=2011-06-15"
DEFAULT_REGION = "us-east-1"


def sts_region(host: str) -> str:
    """The region of an STS host (auth spec, "Region Calculation"); ValueError if invalid."""
    if not 0 < len(host.encode()) <= 255:
        raise ValueError(f"STS host must be 1 to 255 bytes, got {len(host.encode())}")
    labels = host.split(".")
    if any(not label for label in labels):
        raise ValueError(f"STS host {host!r} has an empty label")
    # The spec's pseudocode names "aws.amazonaws.com", its examples "sts.amazonaws.com": both
    if host in ("sts.amazonaws.com", "aws.amazonaws.com") or len(labels) == 1:
        return DEFAULT_REGION
    return labels[1]


def credentials_from_environment(environ: Mapping[str, str]) -> AwsCredentials | None:
    """``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN`` if set),
    or None when neither key is set. One without the other is a configuration error."""
    key_id = environ.get("AWS_ACCESS_KEY_ID") or None
    secret = environ.get("AWS_SECRET_ACCESS_KEY") or None
    if key_id is None and secret is None:
        return None
    if key_id is None or secret is None:
        present, missing = (
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
            if secret is None
            else ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID")
        )
        raise ConfigurationError(f"MONGODB-AWS: {present} is set but {missing} is not")
    return AwsCredentials(key_id, secret, environ.get("AWS_SESSION_TOKEN") or None)


def parse_credentials_document(document: Mapping[str, Any], source: str) -> AwsCredentials:
    """Temporary credentials from the JSON an AWS source answers: the ECS/EC2 endpoints'
    ``{AccessKeyId, SecretAccessKey, Token, Expiration}`` or AssumeRoleWithWebIdentity's
    ``Credentials`` (``SessionToken`` instead of ``Token``; under
    ``AssumeRoleWithWebIdentityResponse.AssumeRoleWithWebIdentityResult`` in STS's JSON).
    ``source`` names where it came from, for the error message."""
    inner = document.get("AssumeRoleWithWebIdentityResponse")
    if isinstance(inner, Mapping):
        inner = inner.get("AssumeRoleWithWebIdentityResult", inner)
        document = inner if isinstance(inner, Mapping) else document
    credentials = document.get("Credentials", document)
    if not isinstance(credentials, Mapping):
        raise OperationFailure(f"MONGODB-AWS: {source} answered no credentials")
    key_id = credentials.get("AccessKeyId")
    secret = credentials.get("SecretAccessKey")
    token = credentials.get("Token", credentials.get("SessionToken"))
    if not (isinstance(key_id, str) and isinstance(secret, str) and isinstance(token, str)):
        raise OperationFailure(
            f"MONGODB-AWS: {source} answered incomplete credentials "
            "(AccessKeyId, SecretAccessKey and a session token are required)"
        )
    return AwsCredentials(key_id, secret, token, _expiration(credentials.get("Expiration")))


def _expiration(value: Any) -> datetime | None:
    """ISO 8601 (``2019-11-07T00:26:07Z``) or epoch seconds (STS's JSON), as UTC."""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if not isinstance(value, str):
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class _Stage(enum.Enum):
    NOT_STARTED = "not started"
    AWAITING_SERVER_FIRST = "awaiting server-first"
    AWAITING_DONE = "awaiting done"
    DONE = "done"


class AwsConversation:
    """One MONGODB-AWS conversation with ``credentials``, the client nonce ``nonce``
    (32 random bytes) and the signing time ``now`` (UTC)."""

    __slots__ = ("_credentials", "_nonce", "_now", "_stage")

    def __init__(self, credentials: AwsCredentials, nonce: bytes, now: datetime) -> None:
        if len(nonce) != NONCE_SIZE:
            raise ValueError(f"the client nonce must be {NONCE_SIZE} bytes")
        self._credentials = credentials
        self._nonce = nonce
        self._now = now
        self._stage = _Stage.NOT_STARTED

    def __repr__(self) -> str:
        return f"<AwsConversation {self._credentials.access_key_id}, {self._stage.value}>"

    @property
    def mechanism(self) -> str:
        return MONGODB_AWS

    @property
    def access_key_id(self) -> str:
        """The (non-secret) access key ID signing the request, for messages."""
        return self._credentials.access_key_id

    @property
    def source(self) -> str:
        return "$external"

    def first_command(self) -> dict[str, Any]:
        if self._stage is not _Stage.NOT_STARTED:
            raise InvalidOperation("MONGODB-AWS conversation already started")
        self._stage = _Stage.AWAITING_SERVER_FIRST
        return sasl_start_command(MONGODB_AWS, encode({"r": self._nonce, "p": GS2_CB_FLAG}))

    def step(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        sasl = parse_sasl_reply(reply)
        if self._stage is _Stage.AWAITING_SERVER_FIRST:
            self._stage = _Stage.AWAITING_DONE
            return sasl_continue_command(sasl.conversation_id, self._client_final(sasl.payload))
        if self._stage is _Stage.AWAITING_DONE:
            if not sasl.done:
                raise OperationFailure(
                    "MONGODB-AWS: the server did not finish the conversation", None, reply
                )
            self._stage = _Stage.DONE
            return None
        raise InvalidOperation(f"MONGODB-AWS conversation {self._stage.value}")

    def _client_final(self, payload: bytes) -> bytes:
        server_nonce, host = self._server_first(payload)
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Content-Length": str(len(STS_BODY)),
            "X-MongoDB-Server-Nonce": base64.b64encode(server_nonce).decode(),
            "X-MongoDB-GS2-CB-Flag": "n",
        }
        signed = sign(
            self._credentials, method="POST", host=host, headers=headers, body=STS_BODY,
            region=sts_region(host), service="sts", now=self._now,
        )
        message: dict[str, Any] = {"a": signed.authorization, "d": signed.amz_date}
        if self._credentials.session_token is not None:
            message["t"] = self._credentials.session_token
        return encode(message)

    def _server_first(self, payload: bytes) -> tuple[bytes, str]:
        """The server nonce and STS host, checked as the auth spec's "Conversation" says."""
        try:
            document = decode(payload)
        except Exception as exc:
            raise OperationFailure(f"MONGODB-AWS: unreadable server reply: {exc}") from None
        server_nonce, host = document.get("s"), document.get("h")
        if not isinstance(server_nonce, bytes) or len(server_nonce) != 2 * NONCE_SIZE:
            raise OperationFailure("MONGODB-AWS: the server nonce is not 64 bytes")
        if server_nonce[:NONCE_SIZE] != self._nonce:
            raise OperationFailure("MONGODB-AWS: the server nonce does not extend the client's")
        if not isinstance(host, str):
            raise OperationFailure("MONGODB-AWS: the server sent no STS host")
        try:
            sts_region(host)
        except ValueError as exc:
            raise OperationFailure(f"MONGODB-AWS: {exc}") from None
        return server_nonce, host

    def speculative_document(self) -> None:
        """MONGODB-AWS has no speculative form (handshake spec: only X509, SCRAM and OIDC)."""
        return None

    def accepts_speculative(self, reply: Mapping[str, Any]) -> bool:
        return False

    def resume(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        raise InvalidOperation("MONGODB-AWS does not authenticate speculatively")
