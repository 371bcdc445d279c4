"""``credential_providers``: the client-side encryption prose tests 26 ("Custom AWS
Credentials", cases 1-4), against asyncmongo.testing's simulated AWS KMS instead of real AWS
(the prose tests need real credentials from a secrets manager).

The simulated KMS accepts two access keys, the environment's and the provider's; the key
that signed each KMS request shows which source the driver used, so "the custom provider
was used" is checked by the request, not only by the provider's call count.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.encryption import AsyncClientEncryption, AutoEncryptionOpts, EncryptionError
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import QueryAnalyzer, Standalone
from asyncmongo.testing.kms import AwsKms
from tests.encryption.kms_env import AWS_ARN, KmsCerts, make_certs

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pymongocrypt") is None,
                       reason="in-use encryption needs pymongocrypt "
                              "(pip install 'asyncmongo[encryption]')"),
    pytest.mark.timeout(120),
]

KEY_VAULT = "keyvault.datakeys"
DETERMINISTIC = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
#: The secrets manager's credentials (what the custom provider returns).
PROVIDER_KEY, PROVIDER_SECRET = "AKIAFROMPROVIDER", "provider-secret"
#: Credentials in the environment, also valid: the default chain would use them.
ENV_KEY, ENV_SECRET = "AKIAFROMENVIRONMENT", "environment-secret"


class CountingProvider:
    """A custom AWS credential provider (async, as the spec's Node.js example) counting its
    calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> dict[str, str]:
        self.calls += 1
        return {"AccessKeyId": PROVIDER_KEY, "SecretAccessKey": PROVIDER_SECRET}


@pytest.fixture(scope="module")
def kms_certs(tmp_path_factory: pytest.TempPathFactory) -> KmsCerts:
    return make_certs(tmp_path_factory.mktemp("kms-certs"))


@dataclass
class Env:
    uri: str
    setup_client: AsyncMongoClient[Any]
    aws: AwsKms
    kms_certs: KmsCerts

    @property
    def master_key(self) -> dict[str, Any]:
        return {"region": "us-east-1", "key": AWS_ARN, "endpoint": self.aws.endpoint}

    @property
    def tls(self) -> dict[str, dict[str, str]]:
        return {"aws": self.kms_certs.tls_options()}

    def encryption(self, kms_providers: dict[str, Any],
                   credential_providers: Any) -> AsyncClientEncryption:
        return AsyncClientEncryption(kms_providers, KEY_VAULT, self.setup_client,
                                     CodecOptions(), kms_tls_options=self.tls,
                                     credential_providers=credential_providers)

    def signing_keys(self) -> list[str]:
        """The access key ID that signed each KMS request, in order."""
        return [request.headers["authorization"].split("Credential=")[1].split("/")[0]
                for request in self.aws.requests]


@pytest.fixture
async def env(kms_certs: KmsCerts, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Env]:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    credentials = {PROVIDER_KEY: PROVIDER_SECRET, ENV_KEY: ENV_SECRET}
    async with Standalone() as server, \
            AwsKms(kms_certs.context(), credentials=credentials) as aws, \
            AsyncMongoClient(server.uri) as setup_client:
        yield Env(server.uri, setup_client, aws, kms_certs)


# -- prose 26 ----------------------------------------------------------------------------------

async def test_case_1_client_encryption_with_credential_providers_and_incorrect_kms_providers(
        env: Env) -> None:
    with pytest.raises(ConfigurationError, match=r"kms_providers\['aws'\] must be empty"):
        env.encryption({"aws": {"accessKeyId": PROVIDER_KEY, "secretAccessKey": PROVIDER_SECRET}},
                       {"aws": CountingProvider()})


async def test_case_2_client_encryption_with_credential_providers_works(env: Env) -> None:
    provider = CountingProvider()
    async with env.encryption({"aws": {}}, {"aws": provider}) as client_encryption:
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(key_id, Binary) and key_id.subtype == 4
    assert provider.calls > 0
    assert env.signing_keys() == [PROVIDER_KEY]


async def test_case_3_auto_encryption_opts_with_credential_providers_and_incorrect_kms_providers(
        env: Env) -> None:
    with pytest.raises(ConfigurationError, match=r"kms_providers\['aws'\] must be empty"):
        AsyncMongoClient(env.uri, auto_encryption_opts=AutoEncryptionOpts(
            {"aws": {"accessKeyId": PROVIDER_KEY, "secretAccessKey": PROVIDER_SECRET}},
            KEY_VAULT, credential_providers={"aws": CountingProvider()}))


async def test_case_4_credential_providers_win_over_valid_environment_variables(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ENV_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", ENV_SECRET)
    provider = CountingProvider()
    async with env.encryption({"aws": {}}, {"aws": provider}) as client_encryption:
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert isinstance(key_id, Binary)
    assert provider.calls > 0
    assert env.signing_keys() == [PROVIDER_KEY]
    # the contrast: without the provider, the same environment signs with its own key
    async with env.encryption({"aws": {}}, None) as client_encryption:
        await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert env.signing_keys() == [PROVIDER_KEY, ENV_KEY]


# -- the rest of the option ---------------------------------------------------------------------

async def test_a_plain_provider_returning_aws_credentials_with_a_session_token(
        env: Env) -> None:
    calls: list[None] = []

    def provider() -> AwsCredentials:
        calls.append(None)
        return AwsCredentials(PROVIDER_KEY, PROVIDER_SECRET, "session-token")

    async with env.encryption({"aws": {}}, {"aws": provider}) as client_encryption:
        await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert calls
    (request,) = env.aws.requests
    assert request.headers.get("x-amz-security-token") == "session-token"


async def test_auto_encryption_uses_the_provider(env: Env) -> None:
    provider = CountingProvider()
    async with env.encryption({"aws": {}}, {"aws": provider}) as client_encryption:
        key_id = await client_encryption.create_data_key("aws", master_key=env.master_key)
    schema = {"bsonType": "object", "properties": {"secret": {"encrypt": {
        "keyId": [key_id], "bsonType": "string", "algorithm": DETERMINISTIC}}}}
    auto_provider = CountingProvider()
    async with QueryAnalyzer() as analyzer:
        opts = AutoEncryptionOpts({"aws": {}}, KEY_VAULT, schema_map={"db.coll": schema},
                                  kms_tls_options=env.tls,
                                  credential_providers={"aws": auto_provider},
                                  **analyzer.auto_encryption_options())
        async with AsyncMongoClient(env.uri, auto_encryption_opts=opts) as client:
            await client.db.coll.insert_one({"_id": 1, "secret": "s"})
            assert await client.db.coll.find_one({"_id": 1}) == {"_id": 1, "secret": "s"}
    assert auto_provider.calls > 0
    stored = await env.setup_client.db.coll.find_one({"_id": 1})
    assert stored is not None and isinstance(stored["secret"], Binary)


async def test_a_failing_provider_fails_the_operation(env: Env) -> None:
    def provider() -> Any:
        raise RuntimeError("secrets manager unavailable")

    async with env.encryption({"aws": {}}, {"aws": provider}) as client_encryption:
        with pytest.raises(EncryptionError, match="secrets manager unavailable"):
            await client_encryption.create_data_key("aws", master_key=env.master_key)
    assert env.aws.requests == []


async def test_a_provider_returning_no_credentials_is_a_configuration_error(env: Env) -> None:
    async with env.encryption({"aws": {}}, {"aws": lambda: 42}) as client_encryption:
        with pytest.raises(ConfigurationError, match="on-demand 'aws' KMS credentials"):
            await client_encryption.create_data_key("aws", master_key=env.master_key)


@pytest.mark.parametrize(("kms_providers", "credential_providers", "message"), [
    ({"aws": {}}, {"aws": "not callable"}, "must be callable"),
    ({"aws": {}, "gcp": {}}, {"gcp": lambda: {}}, "only 'aws' is supported"),
    ({"local": {"key": b"k" * 96}}, {"aws": lambda: {}}, "it is absent"),
    ({"aws": {}}, [("aws", lambda: {})], "must be a mapping"),
])
async def test_invalid_credential_providers(env: Env, kms_providers: dict[str, Any],
                                            credential_providers: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        env.encryption(kms_providers, credential_providers)
    with pytest.raises(ConfigurationError, match=message):
        AutoEncryptionOpts(kms_providers, KEY_VAULT, credential_providers=credential_providers)
