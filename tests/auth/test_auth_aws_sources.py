"""MONGODB-AWS end to end: AsyncMongoClient against a simulated deployment that verifies the
SigV4 signature with the test secrets it knows, with the credentials found where the auth
spec says (a custom provider, the environment, AssumeRoleWithWebIdentity over TLS, the ECS
container endpoint, EC2 instance metadata with IMDSv2) from simulated endpoints on 127.0.0.1,
cached until five minutes before they expire and dropped when authentication fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.errors import OperationFailure, PyMongoError
from asyncmongo.monitoring import ConnectionReadyEvent
from asyncmongo.testing import Standalone
from asyncmongo.testing.aws import SimulatedEcs, SimulatedImds, SimulatedSts, temporary_credentials
from asyncmongo.testing.scram import UserDirectory
from tests.auth.support import closed_port
from tests.support.certs import generate

ROLE_ARN = "arn:aws:iam::123456789012:role/app"
OTHER_ARN = "arn:aws:iam::123456789012:user/other"
_AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT", "ASYNCMONGO_AWS_ECS_ENDPOINT", "AWS_CA_BUNDLE",
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No AWS variable of the machine leaks in, and every endpoint points at a closed local
    port until a test points it at a simulated one (never at a real link-local address)."""
    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    dead = f"http://127.0.0.1:{closed_port()}"
    for name in ("AWS_ENDPOINT_URL_STS", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                 "ASYNCMONGO_AWS_ECS_ENDPOINT"):
        monkeypatch.setenv(name, dead)
    yield monkeypatch


@dataclass
class Deployment:
    users: UserDirectory
    uri: str


@pytest.fixture
async def deployment() -> AsyncIterator[Deployment]:
    users = UserDirectory()
    async with Standalone(users=users) as db:
        yield Deployment(users, db.uri)


def aws_client(
    uri: str, events: list[object] | None = None, **kwargs: Any
) -> AsyncMongoClient[Any]:
    listeners = [events.append] if events is not None else []
    return AsyncMongoClient(uri, authMechanism="MONGODB-AWS", serverSelectionTimeoutMS=3000,
                            event_listeners=listeners, **kwargs)


def connections_ready(events: list[object]) -> int:
    """Pooled connections that finished their handshake (and so authenticated)."""
    return sum(isinstance(event, ConnectionReadyEvent) for event in events)


async def open_connections(client: AsyncMongoClient[Any], count: int) -> None:
    """Run ``count`` pings at once, each held 100 ms by the server, so the pool opens as many
    connections as it lacks."""
    await client.admin.command({
        "configureFailPoint": "failCommand", "mode": {"times": count},
        "data": {"failCommands": ["ping"], "blockConnection": True, "blockTimeMS": 100},
    })
    await asyncio.gather(*(client.admin.command("ping") for _ in range(count)))


async def authenticated_as(client: AsyncMongoClient[Any]) -> list[str]:
    status = await client.admin.command("connectionStatus")
    return [user["user"] for user in status["authInfo"]["authenticatedUsers"]]


def set_environment_credentials(env: pytest.MonkeyPatch, credentials: AwsCredentials) -> None:
    env.setenv("AWS_ACCESS_KEY_ID", credentials.access_key_id)
    env.setenv("AWS_SECRET_ACCESS_KEY", credentials.secret_access_key)
    if credentials.session_token is not None:
        env.setenv("AWS_SESSION_TOKEN", credentials.session_token)


# -- each source, end to end ---------------------------------------------------------------


@pytest.mark.parametrize("session_name", ["app-session", None])
async def test_assume_role_with_web_identity_over_tls(
    deployment: Deployment, aws_env: pytest.MonkeyPatch, tmp_path: Path, session_name: str | None
) -> None:
    certs = generate(tmp_path)
    credentials = temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, credentials)
    token_file = tmp_path / "token"
    token_file.write_text("eyJ.web-identity.token\n")
    aws_env.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token_file))
    aws_env.setenv("AWS_ROLE_ARN", ROLE_ARN)
    if session_name is not None:
        aws_env.setenv("AWS_ROLE_SESSION_NAME", session_name)
    aws_env.setenv("AWS_CA_BUNDLE", str(certs.ca))
    async with SimulatedSts(credentials, web_identity_token="eyJ.web-identity.token",
                            role_arn=ROLE_ARN, ssl_context=certs.server_context()) as sts:
        assert sts.url.startswith("https://127.0.0.1:")
        aws_env.setenv("AWS_ENDPOINT_URL_STS", sts.url)
        client = aws_client(deployment.uri)
        try:
            assert await authenticated_as(client) == [ROLE_ARN]
        finally:
            await client.close()
    [exchange] = sts.exchanges
    assert (exchange.method, exchange.path, exchange.status) == ("POST", "/", 200)
    assert exchange.headers["accept"] == "application/json"
    assert exchange.params["WebIdentityToken"] == "eyJ.web-identity.token"
    assert exchange.params["RoleArn"] == ROLE_ARN
    if session_name is None:
        assert exchange.params["RoleSessionName"].startswith("asyncmongo-")
    else:
        assert exchange.params["RoleSessionName"] == session_name


async def test_sts_certificate_is_verified(
    deployment: Deployment, aws_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    certs = generate(tmp_path)
    credentials = temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, credentials)
    (tmp_path / "token").write_text("token")
    aws_env.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "token"))
    aws_env.setenv("AWS_ROLE_ARN", ROLE_ARN)
    aws_env.setenv("AWS_CA_BUNDLE", str(certs.other_ca))  # not the CA that signed STS's cert
    async with SimulatedSts(credentials, web_identity_token="token", role_arn=ROLE_ARN,
                            ssl_context=certs.server_context()) as sts:
        aws_env.setenv("AWS_ENDPOINT_URL_STS", sts.url)
        client = aws_client(deployment.uri)
        try:
            with pytest.raises(PyMongoError, match=r"AssumeRoleWithWebIdentity.*not be reached"):
                await client.admin.command("ping")
        finally:
            await client.close()
    assert sts.exchanges == []


async def test_a_refused_web_identity_token_is_named_but_not_shown(
    deployment: Deployment, aws_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("stale-token-text")
    aws_env.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "token"))
    aws_env.setenv("AWS_ROLE_ARN", ROLE_ARN)
    async with SimulatedSts(temporary_credentials(), web_identity_token="fresh-token",
                            role_arn=ROLE_ARN) as sts:
        aws_env.setenv("AWS_ENDPOINT_URL_STS", sts.url)
        client = aws_client(deployment.uri)
        try:
            with pytest.raises(OperationFailure) as info:
                await client.admin.command("ping")
        finally:
            await client.close()
    message = str(info.value)
    assert "AssumeRoleWithWebIdentity" in message and ROLE_ARN in message
    assert "HTTP 400" in message and "InvalidIdentityToken" in message
    assert "stale-token-text" not in message


async def test_ecs_container_endpoint(deployment: Deployment, aws_env: pytest.MonkeyPatch) -> None:
    credentials = temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, credentials)
    async with SimulatedEcs(credentials, relative_uri="/v2/credentials/task-1") as ecs:
        aws_env.setenv("ASYNCMONGO_AWS_ECS_ENDPOINT", ecs.url)
        aws_env.setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/task-1")
        client = aws_client(deployment.uri)
        try:
            assert await authenticated_as(client) == [ROLE_ARN]
        finally:
            await client.close()
    assert [(e.method, e.path, e.status) for e in ecs.exchanges] == [
        ("GET", "/v2/credentials/task-1", 200)
    ]


async def test_ec2_instance_metadata_asks_for_the_imdsv2_token_first(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    credentials = temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, credentials)
    async with SimulatedImds(credentials, role="app-role") as imds:
        aws_env.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        client = aws_client(deployment.uri)
        try:
            assert await authenticated_as(client) == [ROLE_ARN]
        finally:
            await client.close()
    put, role, creds = imds.exchanges
    assert (put.method, put.path, put.status) == ("PUT", "/latest/api/token", 200)
    assert put.headers["x-aws-ec2-metadata-token-ttl-seconds"] == "30"
    assert (role.method, role.path) == ("GET", "/latest/meta-data/iam/security-credentials/")
    assert creds.path == "/latest/meta-data/iam/security-credentials/app-role"
    assert role.headers["x-aws-ec2-metadata-token"] == creds.headers["x-aws-ec2-metadata-token"]
    assert role.status == creds.status == 200


async def test_an_instance_without_metadata_says_what_was_tried(deployment: Deployment) -> None:
    client = aws_client(deployment.uri)
    try:
        with pytest.raises(OperationFailure) as info:
            await client.admin.command("ping")
    finally:
        await client.close()
    message = str(info.value)
    assert "no AWS credentials found" in message
    assert "EC2 instance metadata (http://127.0.0.1:" in message


# -- the order of the sources ----------------------------------------------------------------


async def test_the_environment_comes_before_the_endpoints(
    deployment: Deployment, aws_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from_env, from_endpoints = temporary_credentials(), temporary_credentials()
    deployment.users.add_aws_user(OTHER_ARN, from_env)
    deployment.users.add_aws_user(ROLE_ARN, from_endpoints)
    set_environment_credentials(aws_env, from_env)
    (tmp_path / "token").write_text("token")
    aws_env.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "token"))
    aws_env.setenv("AWS_ROLE_ARN", ROLE_ARN)
    aws_env.setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/task-1")
    async with SimulatedSts(from_endpoints, web_identity_token="token", role_arn=ROLE_ARN) as sts, \
            SimulatedEcs(from_endpoints, relative_uri="/v2/credentials/task-1") as ecs, \
            SimulatedImds(from_endpoints) as imds:
        aws_env.setenv("AWS_ENDPOINT_URL_STS", sts.url)
        aws_env.setenv("ASYNCMONGO_AWS_ECS_ENDPOINT", ecs.url)
        aws_env.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        client = aws_client(deployment.uri)
        try:
            assert await authenticated_as(client) == [OTHER_ARN]
            # Then web identity (before ECS and EC2), then ECS (before EC2).
            for variable, expected in (("AWS_ACCESS_KEY_ID", sts), ("AWS_ROLE_ARN", ecs)):
                aws_env.delenv(variable)
                aws_env.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
                aws_env.delenv("AWS_SESSION_TOKEN", raising=False)
                other = aws_client(deployment.uri)
                try:
                    assert await authenticated_as(other) == [ROLE_ARN]
                finally:
                    await other.close()
                assert len(expected.exchanges) == 1
        finally:
            await client.close()
    assert imds.exchanges == []


async def test_a_custom_provider_comes_first_and_is_called_every_time(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    provided, from_env = temporary_credentials(), temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, provided)
    deployment.users.add_aws_user(OTHER_ARN, from_env)
    set_environment_credentials(aws_env, from_env)
    calls: list[str] = []

    async def provider() -> dict[str, Any]:
        calls.append("async")
        await asyncio.sleep(0)
        return {"AccessKeyId": provided.access_key_id,
                "SecretAccessKey": provided.secret_access_key,
                "SessionToken": provided.session_token}

    events: list[object] = []
    client = aws_client(deployment.uri, events,
                        authMechanismProperties={"AWS_CREDENTIAL_PROVIDER": provider})
    try:
        assert await authenticated_as(client) == [ROLE_ARN]
        await open_connections(client, 3)
        assert connections_ready(events) >= 2
        assert len(calls) == connections_ready(events)
    finally:
        await client.close()


@dataclass
class BotocoreLike:
    """What botocore's ``Credentials`` looks like to a provider's caller."""

    access_key: str
    secret_key: str
    token: str | None


async def test_a_plain_provider_may_return_sdk_shaped_credentials(
    deployment: Deployment,
) -> None:
    credentials = temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, credentials)

    def provider() -> BotocoreLike:
        return BotocoreLike(credentials.access_key_id, credentials.secret_access_key,
                            credentials.session_token)

    client = aws_client(deployment.uri,
                        authMechanismProperties={"AWS_CREDENTIAL_PROVIDER": provider})
    try:
        assert await authenticated_as(client) == [ROLE_ARN]
    finally:
        await client.close()


# -- the cache -------------------------------------------------------------------------------


def fetches(imds: SimulatedImds) -> int:
    return sum(1 for e in imds.exchanges if e.path.endswith("/security-credentials/app-role"))


async def test_fetched_credentials_are_cached_for_every_connection(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    credentials = temporary_credentials(expires_in=timedelta(minutes=30))
    deployment.users.add_aws_user(ROLE_ARN, credentials)
    async with SimulatedImds(credentials, role="app-role") as imds:
        aws_env.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        events: list[object] = []
        client = aws_client(deployment.uri, events)
        try:
            await open_connections(client, 4)
            opened = connections_ready(events)
            assert opened >= 2
            assert fetches(imds) == 1
            # Spec: once cached, used even when the environment variables appear later.
            other = temporary_credentials()
            deployment.users.add_aws_user(OTHER_ARN, other)
            set_environment_credentials(aws_env, other)
            await open_connections(client, opened + 2)
            assert connections_ready(events) > opened
            assert set(await authenticated_as(client)) == {ROLE_ARN}
            assert fetches(imds) == 1
        finally:
            await client.close()


async def test_credentials_within_five_minutes_of_expiry_are_fetched_again(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    credentials = temporary_credentials(expires_in=timedelta(minutes=4))
    deployment.users.add_aws_user(ROLE_ARN, credentials)
    async with SimulatedImds(credentials, role="app-role") as imds:
        aws_env.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        events: list[object] = []
        client = aws_client(deployment.uri, events)
        try:
            await open_connections(client, 3)
            assert connections_ready(events) >= 2
            assert fetches(imds) == connections_ready(events)
        finally:
            await client.close()


async def test_an_authentication_failure_clears_the_cache(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    revoked, good = temporary_credentials(), temporary_credentials()
    deployment.users.add_aws_user(ROLE_ARN, good)  # the server does not know `revoked`
    async with SimulatedImds(revoked, role="app-role") as imds:
        aws_env.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        client = aws_client(deployment.uri)
        try:
            with pytest.raises(OperationFailure, match="MONGODB-AWS authentication failed"):
                await client.admin.command("ping")
            imds.credentials = good  # rotated; a cache still holding `revoked` would fail
            assert await authenticated_as(client) == [ROLE_ARN]
            assert fetches(imds) == 2
        finally:
            await client.close()


# -- the simulator verifies, and failures say what to check ----------------------------------


def _tampered(credentials: AwsCredentials, case: str) -> AwsCredentials:
    if case == "wrong secret":
        return AwsCredentials(credentials.access_key_id, "not-the-secret",
                              credentials.session_token)
    if case == "no session token":
        return AwsCredentials(credentials.access_key_id, credentials.secret_access_key)
    if case == "wrong session token":
        return AwsCredentials(credentials.access_key_id, credentials.secret_access_key, "forged")
    if case == "unknown key":
        return temporary_credentials()
    return credentials  # "expired": the server knows them as expired


@pytest.mark.parametrize(
    "case", ["wrong secret", "no session token", "wrong session token", "unknown key", "expired"]
)
async def test_the_simulator_refuses_bad_signatures_with_code_18(
    deployment: Deployment, aws_env: pytest.MonkeyPatch, case: str
) -> None:
    known = temporary_credentials(
        expires_in=timedelta(minutes=-1) if case == "expired" else timedelta(hours=1)
    )
    deployment.users.add_aws_user(ROLE_ARN, known)
    sent = _tampered(known, case)
    set_environment_credentials(aws_env, sent)
    client = aws_client(deployment.uri)
    try:
        with pytest.raises(OperationFailure) as info:
            await client.admin.command("ping")
    finally:
        await client.close()
    error = info.value
    assert error.code == 18 and error.code_name == "AuthenticationFailed"
    message = str(error)
    assert message.startswith(
        f"MONGODB-AWS authentication failed for access key ID {sent.access_key_id!r} "
        "(credentials from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY))"
    )
    assert "Check that the IAM user or role" in message
    assert sent.secret_access_key not in message and known.secret_access_key not in message


async def test_the_right_credentials_pass_the_same_checks(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    long_term = AwsCredentials("AKIDLONGTERMTEST0001", "long-term-secret")
    deployment.users.add_aws_user(OTHER_ARN, long_term)
    set_environment_credentials(aws_env, long_term)
    client = aws_client(deployment.uri)
    try:
        assert await authenticated_as(client) == [OTHER_ARN]
    finally:
        await client.close()


def test_temporary_credentials_expire_when_asked() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    credentials = temporary_credentials(expires_in=timedelta(minutes=10), now=now)
    assert credentials.access_key_id.startswith("ASIA") and len(credentials.access_key_id) == 20
    assert credentials.expiration == now + timedelta(minutes=10)
    assert credentials.session_token


async def test_an_endpoint_outage_names_the_endpoint_and_the_status(
    deployment: Deployment, aws_env: pytest.MonkeyPatch
) -> None:
    async with SimulatedEcs(temporary_credentials()) as ecs:
        ecs.fail_with = 503
        aws_env.setenv("ASYNCMONGO_AWS_ECS_ENDPOINT", ecs.url)
        aws_env.setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", ecs.relative_uri)
        client = aws_client(deployment.uri)
        try:
            with pytest.raises(OperationFailure) as info:
                await client.admin.command("ping")
        finally:
            await client.close()
    assert f"the ECS container endpoint ({ecs.url}{ecs.relative_uri}) answered HTTP 503" in str(
        info.value
    )
