"""MONGODB-AWS as a pure conversation: the auth spec's example messages byte for byte, the
server-first checks, region calculation, and credentials from the environment and from
the JSON the AWS credential sources answer."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest

from asyncmongo.bson.codec import decode, encode
from asyncmongo.core.auth.aws import (
    AwsConversation,
    credentials_from_environment,
    parse_credentials_document,
    sts_region,
)
from asyncmongo.core.auth.sigv4 import AwsCredentials, sign
from asyncmongo.errors import ConfigurationError, InvalidOperation, OperationFailure

# The auth spec's example conversation ("Conversation", MONGODB-AWS).
CLIENT_FIRST = "NAAAAAVyACAAAAAAWj0lSjp8M0BMKGU+QVAzRSpWfk0hJigqO1V+b0FaVz4QcABuAAAAAA=="
SERVER_FIRST = (
    "ZgAAAAVzAEAAAAAAWj0lSjp8M0BMKGU+QVAzRSpWfk0hJigqO1V+b0FaVz5Rj7x9UOBHJLvPgvgPS9sSzZUWgAPT"
    "y8HBbI1cG1WJ9gJoABIAAABzdHMuYW1hem9uYXdzLmNvbQAA"
)
SPEC_NONCE = decode(base64.b64decode(CLIENT_FIRST))["r"]
SPEC_TIME = dt.datetime(2019, 11, 12, 21, 1, 22, tzinfo=dt.UTC)
CREDENTIALS = AwsCredentials("AKIAICGVLKOKZVY3X3DA", "not-the-spec-secret")


def server_first(payload: bytes, conversation_id: int = 1) -> dict[str, Any]:
    return {"conversationId": conversation_id, "done": False, "payload": payload, "ok": 1.0}


def test_client_first_is_the_spec_example_byte_for_byte() -> None:
    command = AwsConversation(CREDENTIALS, SPEC_NONCE, SPEC_TIME).first_command()
    assert command["saslStart"] == 1 and command["mechanism"] == "MONGODB-AWS"
    assert command["payload"] == base64.b64decode(CLIENT_FIRST)


def test_client_final_has_the_spec_shape() -> None:
    conversation = AwsConversation(CREDENTIALS, SPEC_NONCE, SPEC_TIME)
    conversation.first_command()
    command = conversation.step(server_first(base64.b64decode(SERVER_FIRST)))
    assert command is not None and command["saslContinue"] == 1
    assert command["conversationId"] == 1
    message = decode(command["payload"])
    assert set(message) == {"a", "d"}  # no session token with permanent credentials
    assert message["d"] == "20191112T210122Z"
    assert message["a"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIAICGVLKOKZVY3X3DA/20191112/us-east-1/sts/aws4_request, "
        "SignedHeaders=content-length;content-type;host;x-amz-date;x-mongodb-gs2-cb-flag;"
        "x-mongodb-server-nonce, Signature="
    )
    assert conversation.step({"conversationId": 1, "done": True, "payload": b"", "ok": 1}) is None


def test_signature_is_the_sts_request_the_server_replays() -> None:
    """What the server (and STS) recompute from the secret, the headers and the body."""
    credentials = AwsCredentials("AKID", "secret", "session-token")
    conversation = AwsConversation(credentials, SPEC_NONCE, SPEC_TIME)
    conversation.first_command()
    server_nonce = decode(base64.b64decode(SERVER_FIRST))["s"]
    command = conversation.step(server_first(encode({"s": server_nonce, "h": "sts.us-west-2.x"})))
    assert command is not None
    message = decode(command["payload"])
    expected = sign(
        credentials, method="POST", host="sts.us-west-2.x", region="us-west-2", service="sts",
        headers={
            "Content-Type": "application/x-www-form-urlencoded", "Content-Length": "43",
            "X-MongoDB-Server-Nonce": base64.b64encode(server_nonce).decode(),
            "X-MongoDB-GS2-CB-Flag": "n",
        },
        body=b"Action=GetCallerIdentity&Version=2011-06-15", now=SPEC_TIME,
    )
    assert message == {"a": expected.authorization, "d": "20191112T210122Z", "t": "session-token"}
    assert "x-amz-security-token" in message["a"]


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"s": SPEC_NONCE + bytes(31), "h": "sts.amazonaws.com"}, "not 64 bytes"),
        ({"s": bytes(64), "h": "sts.amazonaws.com"}, "does not extend"),
        ({"s": SPEC_NONCE + bytes(32)}, "no STS host"),
        ({"s": SPEC_NONCE + bytes(32), "h": "sts..com"}, "empty label"),
        ({"s": SPEC_NONCE + bytes(32), "h": ""}, "1 to 255 bytes"),
    ],
)
def test_server_first_is_checked(payload: dict[str, Any], error: str) -> None:
    conversation = AwsConversation(CREDENTIALS, SPEC_NONCE, SPEC_TIME)
    conversation.first_command()
    with pytest.raises(OperationFailure, match=error):
        conversation.step(server_first(encode(payload)))


def test_unfinished_conversation_and_misuse() -> None:
    conversation = AwsConversation(CREDENTIALS, SPEC_NONCE, SPEC_TIME)
    with pytest.raises(InvalidOperation):
        conversation.step({"ok": 1, "done": False, "payload": b"", "conversationId": 1})
    conversation.first_command()
    with pytest.raises(InvalidOperation):
        conversation.first_command()
    conversation.step(server_first(base64.b64decode(SERVER_FIRST)))
    with pytest.raises(OperationFailure, match="did not finish"):
        conversation.step({"conversationId": 1, "done": False, "payload": b"", "ok": 1})
    with pytest.raises(ValueError, match="32 bytes"):
        AwsConversation(CREDENTIALS, b"short", SPEC_TIME)
    assert conversation.speculative_document() is None
    assert "not-the-spec-secret" not in repr(conversation)


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("sts.amazonaws.com", "us-east-1"),
        ("sts.us-west-2.amazonaws.com", "us-west-2"),
        ("sts.us-west-2.amazonaws.com.ch", "us-west-2"),
        ("example.com", "com"),
        ("localhost", "us-east-1"),
        ("aws.amazonaws.com", "us-east-1"),
    ],
)
def test_region_calculation(host: str, region: str) -> None:
    assert sts_region(host) == region


@pytest.mark.parametrize("host", ["sts..com", ".amazonaws.com", "sts.amazonaws.", "", "a" * 256])
def test_region_calculation_errors(host: str) -> None:
    with pytest.raises(ValueError, match="STS host"):
        sts_region(host)


def test_credentials_from_the_environment() -> None:
    assert credentials_from_environment({}) is None
    found = credentials_from_environment(
        {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret"}
    )
    assert found == AwsCredentials("AKID", "secret")
    with_token = credentials_from_environment(
        {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}
    )
    assert with_token is not None and with_token.session_token == "t"


@pytest.mark.parametrize(
    ("environ", "missing"),
    [({"AWS_ACCESS_KEY_ID": "AKID"}, "AWS_SECRET_ACCESS_KEY is not"),
     ({"AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}, "AWS_ACCESS_KEY_ID is not")],
)
def test_half_the_credentials_is_an_error(environ: dict[str, str], missing: str) -> None:
    with pytest.raises(ConfigurationError, match=missing) as info:
        credentials_from_environment(environ)
    assert "MONGODB-AWS" in str(info.value) and "'s'" not in str(info.value)


def test_ecs_and_ec2_answers() -> None:
    found = parse_credentials_document(
        {"AccessKeyId": "AKID", "SecretAccessKey": "s", "Token": "t",
         "Expiration": "2019-11-07T00:26:07Z", "RoleArn": "arn"},
        "the ECS endpoint",
    )
    assert found.session_token == "t"
    assert found.expiration == dt.datetime(2019, 11, 7, 0, 26, 7, tzinfo=dt.UTC)


def test_assume_role_with_web_identity_answers() -> None:
    answer = {"AssumeRoleWithWebIdentityResponse": {"AssumeRoleWithWebIdentityResult": {
        "Credentials": {"AccessKeyId": "AKID", "SecretAccessKey": "s", "SessionToken": "t",
                        "Expiration": 1573086367}}}}
    found = parse_credentials_document(answer, "AssumeRoleWithWebIdentity")
    assert found.session_token == "t"
    assert found.expiration == dt.datetime(2019, 11, 7, 0, 26, 7, tzinfo=dt.UTC)
    flat = {"Credentials": {"AccessKeyId": "A", "SecretAccessKey": "s", "SessionToken": "t"}}
    assert parse_credentials_document(flat, "STS").expiration is None


def test_incomplete_answers_name_the_source() -> None:
    with pytest.raises(OperationFailure, match="the EC2 endpoint answered incomplete"):
        parse_credentials_document({"AccessKeyId": "AKID"}, "the EC2 endpoint")
    with pytest.raises(OperationFailure, match="STS answered no credentials"):
        parse_credentials_document({"Credentials": "nope"}, "STS")
