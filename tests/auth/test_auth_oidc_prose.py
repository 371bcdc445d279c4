"""The auth spec's MONGODB-OIDC prose tests (specifications: source/auth/tests/mongodb-oidc.md,
"Machine Authentication Flow Prose Tests" and "Human Authentication Flow Prose Tests"), run
against asyncmongo.testing with a test identity provider in place of the Evergreen OIDC
setup: the callbacks hand out tokens the provider signed instead of reading the token files
of users test_user1/test_user2.

Human 1.3-1.5 (multiple principals) use a deployment with two identity providers chosen by
principal name (mongod's oidcIdentityProviders ``matchPattern``). Not run here: the machine
section's Azure/GCP/k8s tests on real cloud hosts (the built-in environments are tested
against local metadata servers in test_auth_oidc.py instead).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.auth_oidc import OIDCCallbackResult
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.testing import Standalone, TestIdentityProvider
from asyncmongo.testing.scram import UserDirectory
from tests.auth.oidc_support import CountingCallback, Env, oidc_deployment, oidc_of

pytestmark = pytest.mark.timeout(60)

FIND_REAUTH = [("started", "find"), ("failed", "find"), ("started", "find"),
               ("succeeded", "find")]


@pytest.fixture
async def env() -> Any:
    async with oidc_deployment() as env:
        yield env


# -- Machine: 1. Callback authentication -----------------------------------------------------

async def test_machine_1_1_callback_is_called_during_authentication(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.test.test.find_one()
    assert callback.count == 1


async def test_machine_1_2_callback_is_called_once_for_multiple_connections(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        async def finds() -> None:
            for _ in range(100):
                await client.test.test.find_one()
        await asyncio.gather(*(finds() for _ in range(10)))
        statistics = [s.pool.statistics() for s in client._runtime.topology.servers.values()]
    assert callback.count == 1
    assert sum(s.idle for s in statistics) > 1  # several connections shared the one token


# -- Machine: 2. OIDC callback validation ----------------------------------------------------

async def test_machine_2_1_valid_callback_inputs(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.test.test.find_one()
    context = callback.contexts[0]
    assert context.version == 1
    assert context.idp_info is None and context.refresh_token is None
    # No timeoutMS: min(remaining connectTimeoutMS (20s), ...) bounds the callback.
    assert 0 < context.timeout_seconds <= 20


async def test_machine_2_2_callback_returns_null(env: Env) -> None:
    callback = CountingCallback(lambda context, n: None)
    async with env.client(callback) as client:
        with pytest.raises(OperationFailure, match="access_token"):
            await client.test.test.find_one()


async def test_machine_2_3_callback_returns_missing_data(env: Env) -> None:
    callback = CountingCallback(lambda context, n: OIDCCallbackResult(""))
    async with env.client(callback) as client:
        with pytest.raises(OperationFailure, match="access_token"):
            await client.test.test.find_one()


async def test_machine_2_4_invalid_client_configuration_with_callback(env: Env) -> None:
    callback = CountingCallback(env.good())
    with pytest.raises(ConfigurationError, match="ENVIRONMENT cannot be combined"):
        AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                         authMechanismProperties={"OIDC_CALLBACK": callback,
                                                  "ENVIRONMENT": "test"})


async def test_machine_2_5_invalid_use_of_allowed_hosts(env: Env) -> None:
    with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
        AsyncMongoClient(env.deployment.uri, authMechanism="MONGODB-OIDC",
                         authMechanismProperties={"ENVIRONMENT": "azure",
                                                  "TOKEN_RESOURCE": "r", "ALLOWED_HOSTS": []})


async def test_machine_2_6_negative_expiry_is_an_error(env: Env) -> None:
    callback = CountingCallback(
        lambda context, n: OIDCCallbackResult(env.token(), expires_in_seconds=-1))
    async with env.client(callback) as client:
        with pytest.raises(OperationFailure, match="expires_in_seconds"):
            await client.test.test.find_one()


# -- Machine: 3. Authentication failure ------------------------------------------------------

async def test_machine_3_1_failure_with_cached_tokens_fetches_a_new_token(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.aconnect()
        oidc_of(client).access_token = "bad-token"  # poison the Client Cache
        await client.test.test.find_one()
    assert callback.count == 1


async def test_machine_3_2_failures_without_cached_tokens_return_an_error(env: Env) -> None:
    callback = CountingCallback(lambda context, n: OIDCCallbackResult("bad-token"))
    async with env.client(callback) as client:
        with pytest.raises(OperationFailure) as raised:
            await client.test.test.find_one()
    assert raised.value.code == 18
    assert callback.count == 1


async def test_machine_3_3_unexpected_error_code_does_not_clear_the_cache(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        with env.fail_point(["saslStart"], errorCode=20):
            with pytest.raises(OperationFailure) as raised:
                await client.test.test.insert_one({})
        assert raised.value.code == 20
        assert callback.count == 1
        await client.test.test.insert_one({})
    assert callback.count == 1


# -- Machine: 4. Reauthentication ------------------------------------------------------------

async def test_machine_4_1_reauthentication_succeeds(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.test.test.find_one()
        env.events.seen.clear()
        with env.fail_point(["find"], errorCode=391):
            await client.test.test.find_one()
        assert env.events.seen == FIND_REAUTH
    assert callback.count == 2


def _good_then_bad(env: Env) -> Any:
    return lambda context, n: OIDCCallbackResult(env.token() if n == 1 else "bad-token")


async def test_machine_4_2_read_commands_fail_if_reauthentication_fails(env: Env) -> None:
    callback = CountingCallback(_good_then_bad(env))
    async with env.client(callback) as client:
        await client.test.test.find_one()
        with env.fail_point(["find"], errorCode=391):
            with pytest.raises(OperationFailure) as raised:
                await client.test.test.find_one()
        assert raised.value.code == 18
        assert callback.count == 2


async def test_machine_4_3_write_commands_fail_if_reauthentication_fails(env: Env) -> None:
    callback = CountingCallback(_good_then_bad(env))
    async with env.client(callback) as client:
        await client.test.test.insert_one({})
        with env.fail_point(["insert"], errorCode=391):
            with pytest.raises(OperationFailure) as raised:
                await client.test.test.insert_one({})
        assert raised.value.code == 18
        assert callback.count == 2


async def test_machine_4_4_speculative_authentication_is_ignored_on_reauthentication(
    env: Env,
) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.aconnect()
        oidc_of(client).access_token = env.token()  # a valid cached token: speculative auth
        await client.test.test.insert_one({})
        assert callback.count == 0
        sasl_starts = env.deployment.server.statistics().command_counts.get("saslStart", 0)
        with env.fail_point(["insert"], errorCode=391):
            await client.test.test.insert_one({})
        assert callback.count == 1
        # Reauthentication is a saslStart, never a hello with speculativeAuthenticate.
        counts = env.deployment.server.statistics().command_counts
        assert counts.get("saslStart", 0) == sasl_starts + 1


async def test_machine_4_5_reauthentication_succeeds_when_a_session_is_involved(
    env: Env,
) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback) as client:
        await client.test.test.find_one()
        with env.fail_point(["find"], errorCode=391):
            async with client.start_session() as session:
                await client.test.test.find_one({}, session=session)
    assert callback.count == 2


# -- Human: 1. OIDC human callback authentication --------------------------------------------

async def test_human_1_1_single_principal_implicit_username(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
    assert callback.count == 1


async def test_human_1_2_single_principal_explicit_username(env: Env) -> None:
    callback = CountingCallback(env.good())
    uri = env.deployment.uri.replace("mongodb://", "mongodb://test_user1@")
    async with AsyncMongoClient(uri, authMechanism="MONGODB-OIDC",
                                authMechanismProperties={"OIDC_HUMAN_CALLBACK": callback}
                                ) as client:
        await client.test.test.find_one()
    assert callback.contexts[0].username == "test_user1"


@asynccontextmanager
async def two_providers() -> AsyncIterator[tuple[Any, TestIdentityProvider, TestIdentityProvider]]:
    """A deployment with two identity providers, chosen by principal name (users 1 and 2)."""
    users = UserDirectory()
    first = users.enable_oidc(TestIdentityProvider(issuer="https://idp1"),
                              match_pattern="test_user1")
    second = users.enable_oidc(TestIdentityProvider(issuer="https://idp2",
                                                    client_id="client-2"),
                               match_pattern="test_user2")
    async with Standalone(users=users) as deployment:
        yield deployment, first, second


def _human_client(deployment: Any, user: str | None, callback: CountingCallback
                  ) -> AsyncMongoClient:
    userinfo = f"{user}@" if user else ""
    uri = deployment.uri.replace("mongodb://", f"mongodb://{userinfo}")
    return AsyncMongoClient(uri, authMechanism="MONGODB-OIDC",
                            authMechanismProperties={"OIDC_HUMAN_CALLBACK": callback},
                            serverSelectionTimeoutMS=2000)


def _token_of_the_named_idp(*providers: TestIdentityProvider) -> Any:
    """A human callback that signs in with the IdP the server named (by its issuer)."""
    def answer(context: Any, n: int) -> OIDCCallbackResult:
        idp = next(p for p in providers if p.issuer == context.idp_info.issuer)
        return OIDCCallbackResult(idp.mint_token(context.username or "anonymous"))
    return answer


@pytest.mark.parametrize("user", ["test_user1", "test_user2"])
async def test_human_1_3_and_1_4_multiple_principal_users(user: str) -> None:
    async with two_providers() as (deployment, first, second):
        callback = CountingCallback(_token_of_the_named_idp(first, second))
        async with _human_client(deployment, user, callback) as client:
            await client.test.test.find_one()
        expected = first if user == "test_user1" else second
        assert callback.contexts[0].idp_info.issuer == expected.issuer


async def test_human_1_5_multiple_principal_no_user() -> None:
    async with two_providers() as (deployment, first, second):
        callback = CountingCallback(_token_of_the_named_idp(first, second))
        async with _human_client(deployment, None, callback) as client:
            with pytest.raises(OperationFailure) as raised:
                await client.test.test.find_one()
        assert raised.value.code == 18
        assert callback.count == 0


async def test_human_1_6_allowed_hosts_blocked(env: Env) -> None:
    for allowed in ([], ["example.com"]):
        callback = CountingCallback(env.good())
        async with env.client(callback, human=True, properties={"ALLOWED_HOSTS": allowed},
                              serverSelectionTimeoutMS=2000) as client:
            with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
                await client.test.test.find_one()
        assert callback.count == 0  # refused before any callback


async def test_human_1_7_allowed_hosts_in_connection_string_ignored(env: Env) -> None:
    host = env.deployment.uri.split("//", 1)[1].split("/", 1)[0]
    uri = (f"mongodb://{host}/?authMechanism=MONGODB-OIDC"
           "&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:r,ALLOWED_HOSTS:%5B%5D")
    with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
        AsyncMongoClient(uri)


async def test_human_1_8_machine_idp_with_human_callback(env: Env) -> None:
    callback = CountingCallback(
        lambda context, n: OIDCCallbackResult(env.token("test_machine")))
    uri = env.deployment.uri.replace("mongodb://", "mongodb://test_machine@")
    async with AsyncMongoClient(uri, authMechanism="MONGODB-OIDC",
                                authMechanismProperties={"OIDC_HUMAN_CALLBACK": callback}
                                ) as client:
        await client.test.test.find_one()
    assert callback.count == 1


# -- Human: 2. OIDC human callback validation ------------------------------------------------

async def test_human_2_1_valid_callback_inputs(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
    context = callback.contexts[0]
    assert context.version == 1
    assert context.timeout_seconds == 300  # 5 minutes, not subject to CSOT
    assert context.idp_info is not None
    assert context.idp_info.issuer == env.idp.issuer
    assert context.idp_info.clientId == env.idp.client_id
    assert context.refresh_token is None


async def test_human_2_2_callback_returns_missing_data(env: Env) -> None:
    callback = CountingCallback(lambda context, n: {"refresh_token": "x"})
    async with env.client(callback, human=True) as client:
        with pytest.raises(OperationFailure, match="access_token"):
            await client.test.test.find_one()


async def test_human_2_3_refresh_token_is_passed_to_the_callback(env: Env) -> None:
    callback = CountingCallback(env.good(refresh_token="refresh-1"))
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
        with env.fail_point(["find"], errorCode=391):
            await client.test.test.find_one()
    assert callback.count == 2
    assert callback.contexts[1].refresh_token == "refresh-1"
    assert callback.contexts[1].idp_info == callback.contexts[0].idp_info


# -- Human: 3. Speculative authentication ----------------------------------------------------

async def test_human_3_1_uses_speculative_authentication_with_a_cached_token(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback, human=True) as client:
        await client.aconnect()
        oidc_of(client).access_token = env.token()
        with env.fail_point(["find"], closeConnection=True):
            with pytest.raises(Exception):  # noqa: B017 (a network error, as the spec says)
                await client.test.test.find_one()
        with env.fail_point(["saslStart"], errorCode=18):
            await client.test.test.find_one()
    assert callback.count == 0


async def test_human_3_2_no_speculative_authentication_without_a_cached_token(
    env: Env,
) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback, human=True) as client:
        with env.fail_point(["saslStart"], errorCode=18):
            with pytest.raises(OperationFailure) as raised:
                await client.test.test.find_one()
    assert raised.value.code == 18


# -- Human: 4. Reauthentication --------------------------------------------------------------

async def test_human_4_1_succeeds(env: Env) -> None:
    callback = CountingCallback(env.good(refresh_token="refresh"))
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
        assert callback.count == 1
        env.events.seen.clear()
        with env.fail_point(["find"], errorCode=391):
            await client.test.test.find_one()
        assert env.events.seen == FIND_REAUTH
    assert callback.count == 2


async def test_human_4_2_succeeds_without_refresh(env: Env) -> None:
    callback = CountingCallback(env.good())
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
        with env.fail_point(["find"], errorCode=391):
            await client.test.test.find_one()
    assert callback.count == 2
    assert callback.contexts[1].refresh_token is None


async def test_human_4_3_succeeds_after_refresh_fails(env: Env) -> None:
    def answer(context: Any, n: int) -> OIDCCallbackResult:
        if n == 2:  # the refresh: the IdP refuses it, the callback answers a bad token
            return OIDCCallbackResult("bad-token", refresh_token="bad")
        return OIDCCallbackResult(env.token(), refresh_token="bad")

    callback = CountingCallback(answer)
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
        assert callback.count == 1
        with env.fail_point(["find"], errorCode=391):
            await client.test.test.find_one()
    # refresh (bad token, 18) -> refresh token dropped -> a new two-step conversation
    assert callback.count == 3
    assert callback.contexts[1].refresh_token == "bad"
    assert callback.contexts[2].refresh_token is None


async def test_human_4_4_fails(env: Env) -> None:
    def answer(context: Any, n: int) -> OIDCCallbackResult:
        token = env.token() if n == 1 else "bad-token"
        return OIDCCallbackResult(token, refresh_token="bad")

    callback = CountingCallback(answer)
    async with env.client(callback, human=True) as client:
        await client.test.test.find_one()
        with env.fail_point(["find"], errorCode=391):
            with pytest.raises(OperationFailure) as raised:
                await client.test.test.find_one()
        assert raised.value.code == 18
        assert callback.count == 3
