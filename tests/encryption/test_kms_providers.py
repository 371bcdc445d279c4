"""The aws, azure and gcp KMS providers against the simulated KMS servers
(asyncmongo.testing.kms) over TLS with a test CA, and the prose tests about them: 2 (data
key and double encryption, explicit part), 7 (custom endpoints), 10 (KMS TLS: expired and
wrong-host certificates), 11 (KMS TLS options), 15 (on-demand AWS credentials), 24 (KMS
retries); the kmip provider against the simulated KMIP server, and the KMIP cases of prose 2,
7 (4, 10-12) and 11 (case 4).

Not run here, with the reason: prose 2 step 4 and the auto-encrypting client of prose 2 need
automatic encryption (query analysis), which asyncmongo does not have; the decrypting client
(bypass_auto_encryption) is used instead. Prose 7 cases 1-3 (no endpoint: the real
kms.us-east-1.amazonaws.com) need the cloud; prose 7 case 9 depends on how Google's real
front end answers.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import Algorithm, AsyncClientEncryption, AutoEncryptionOpts
from asyncmongo.errors import AutoReconnect, ConfigurationError, EncryptionError, InvalidArgument
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import Standalone
from asyncmongo.testing.kms import AwsKms, AzureKms, GcpKms, KmipKms, KmsHttpServer
from asyncmongo.testing.kms.kmip import Operation
from tests.encryption.kms_env import (
    AWS_ARN,
    AWS_KEY_ID,
    AWS_SECRET,
    KmsCerts,
    KmsServers,
    kms_servers,
    make_certs,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

DETERMINISTIC = Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic
KEY_VAULT = "keyvault.datakeys"
CLOUD = ["aws", "azure", "gcp"]


@pytest.fixture(scope="module")
def kms_certs(tmp_path_factory: pytest.TempPathFactory) -> KmsCerts:
    return make_certs(tmp_path_factory.mktemp("kms-certs"))


class Env:
    def __init__(self, uri: str, client: AsyncMongoClient[Any], kms: KmsServers,
                 events: list[Any]) -> None:
        self.uri = uri
        self.client = client
        self.kms = kms
        self.events = events

    def encryption(self, providers: dict[str, Any] | None = None,
                   tls: dict[str, Any] | None = None) -> AsyncClientEncryption:
        return AsyncClientEncryption(
            self.kms.providers() if providers is None else providers, KEY_VAULT, self.client,
            CodecOptions(), kms_tls_options=self.kms.tls_options() if tls is None else tls,
        )


@pytest.fixture
async def env(kms_certs: KmsCerts) -> AsyncIterator[Env]:
    events: list[Any] = []
    async with Standalone() as server, kms_servers(kms_certs) as kms:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            yield Env(server.uri, client, kms, events)


async def _round_trip(ce: AsyncClientEncryption, provider: str,
                      master_key: dict[str, Any] | None) -> None:
    key_id = await ce.create_data_key(provider, master_key=master_key)
    encrypted = await ce.encrypt("test", DETERMINISTIC, key_id=key_id)
    assert await ce.decrypt(encrypted) == "test"


# -- each provider ---------------------------------------------------------------------------

@pytest.mark.parametrize("provider", CLOUD)
async def test_data_key_wrapped_by_the_kms_and_unwrapped_by_a_new_client_encryption(
        env: Env, provider: str) -> None:
    async with env.encryption() as ce:
        key_id = await ce.create_data_key(provider, master_key=env.kms.master_key(provider))
        encrypted = await ce.encrypt("secret", DETERMINISTIC, key_id=key_id)
        key = await ce.get_key(key_id)
        assert key is not None and key["masterKey"]["provider"] == provider
    server: KmsHttpServer = getattr(env.kms, provider)
    wrapped = len(server.requests)
    async with env.encryption() as fresh:  # no cached data key: the KMS must unwrap it
        assert await fresh.decrypt(encrypted) == "secret"
    assert len(server.requests) > wrapped


async def test_a_key_wrapped_by_one_gcp_key_is_not_unwrapped_by_another(env: Env) -> None:
    """GCP and Azure name the master key in the unwrap request (AWS's ciphertext blob names
    its own key, as the real one does)."""
    async with env.encryption() as ce:
        key_id = await ce.create_data_key("gcp", master_key=env.kms.master_key("gcp"))
        encrypted = await ce.encrypt("x", DETERMINISTIC, key_id=key_id)
    await env.client.keyvault.datakeys.update_one({"_id": key_id},
                                                  {"$set": {"masterKey.keyName": "other"}})
    async with env.encryption() as fresh:
        with pytest.raises(EncryptionError, match="another master key"):
            await fresh.decrypt(encrypted)


@pytest.mark.parametrize("provider, settings", [
    ("aws", {"accessKeyId": AWS_KEY_ID, "secretAccessKey": "wrong"}),
    ("aws", {"accessKeyId": "AKIAUNKNOWN", "secretAccessKey": AWS_SECRET}),
    ("azure", {"tenantId": "t", "clientId": "client-id", "clientSecret": "wrong"}),
])
async def test_bad_credentials_are_the_kms_error(env: Env, provider: str,
                                                 settings: dict[str, Any]) -> None:
    providers = env.kms.providers()
    if provider == "azure":
        settings = {**settings, "identityPlatformEndpoint": env.kms.azure.endpoint}
    providers[provider] = settings
    async with env.encryption(providers) as ce:
        with pytest.raises(EncryptionError) as info:
            await ce.create_data_key(provider, master_key=env.kms.master_key(provider))
    assert "HTTP status=4" in str(info.value) or "Error in KMS response" in str(info.value)
    assert await env.client.keyvault.datakeys.count_documents({}) == 0


# -- kmip ------------------------------------------------------------------------------------

@pytest.mark.parametrize("delegated, created, unwrapped", [
    (False, [Operation.REGISTER, Operation.ACTIVATE, Operation.GET], [Operation.GET]),
    (True, [Operation.CREATE, Operation.ACTIVATE, Operation.ENCRYPT], [Operation.DECRYPT]),
])
async def test_kmip_data_keys(env: Env, delegated: bool, created: list[Operation],
                              unwrapped: list[Operation]) -> None:
    kmip = env.kms.kmip
    master_key = {"delegated": True} if delegated else {}
    async with env.encryption() as ce:
        key_id = await ce.create_data_key("kmip", master_key=master_key)
        assert kmip.operations == created
        encrypted = await ce.encrypt("kmip value", DETERMINISTIC, key_id=key_id)
        assert kmip.operations == created + unwrapped  # the new key is unwrapped to use it
        key = await ce.get_key(key_id)
    assert key is not None and key["masterKey"]["keyId"] in kmip.objects
    assert key["masterKey"].get("delegated", False) is delegated
    async with env.encryption() as fresh:
        assert await fresh.decrypt(encrypted) == "kmip value"
    assert kmip.operations == created + unwrapped + unwrapped


async def test_kmip_unknown_key_id_is_the_servers_error(env: Env) -> None:
    async with env.encryption() as ce:
        with pytest.raises(EncryptionError, match="no object '42'"):
            await ce.create_data_key("kmip", master_key={"keyId": "42"})


async def test_prose_7_kmip_cases(env: Env) -> None:
    """Case 4 (nothing listens at the master key's endpoint), 10 (keyId "1", the provider's
    endpoint; unresolvable provider endpoint), 11 (the master key's endpoint), 12
    (unresolvable master key endpoint). Key "1" is registered beforehand, as on the spec's
    KMIP server."""
    key_one = env.kms.kmip.register(bytes(range(96)))
    assert key_one == "1"
    async with env.encryption() as ce:
        with pytest.raises(EncryptionError) as info:
            await ce.create_data_key("kmip", master_key={"keyId": "1",
                                                         "endpoint": "127.0.0.1:1"})
        assert isinstance(info.value.cause, AutoReconnect)
        await _round_trip(ce, "kmip", {"keyId": "1"})
        await _round_trip(ce, "kmip", {"keyId": "1", "endpoint": env.kms.kmip.endpoint})
        with pytest.raises(EncryptionError, match=r"doesnotexist\.invalid"):
            await ce.create_data_key("kmip", master_key={
                "keyId": "1", "endpoint": "doesnotexist.invalid:5698"})
    invalid = {"kmip": {"endpoint": "doesnotexist.invalid:5698"}}
    async with env.encryption(invalid) as ce_invalid:
        with pytest.raises(EncryptionError, match=r"doesnotexist\.invalid"):
            await ce_invalid.create_data_key("kmip", master_key={"keyId": "1"})


async def test_prose_11_case_4_kmip(env: Env, kms_certs: KmsCerts) -> None:
    files = kms_certs.files
    providers = {"kmip": {"endpoint": env.kms.kmip.endpoint}}
    async with env.encryption(providers, tls={"kmip": kms_certs.tls_options()}) as no_cert:
        with pytest.raises(EncryptionError):
            await no_cert.create_data_key("kmip", master_key={})
    assert env.kms.kmip.operations == []
    async with env.encryption(providers) as with_tls:
        await with_tls.create_data_key("kmip", master_key={})
    for cert, error in ((kms_certs.expired, "certificate has expired"),
                        (files.server_wrong_host, r"IP address mismatch|hostname mismatch")):
        async with KmipKms(kms_certs.context(cert)) as bad:
            providers = {"kmip": {"endpoint": bad.endpoint}}
            async with env.encryption(providers) as ce:
                with pytest.raises(EncryptionError, match=error):
                    await ce.create_data_key("kmip", master_key={})


# -- prose 2: data key and double encryption (explicit part) -------------------------------

@pytest.mark.parametrize("provider", [*CLOUD, "kmip", "local"])
async def test_prose_2_data_key_and_double_encryption(env: Env, provider: str) -> None:
    from tests.encryption.test_client_encryption import LOCAL_MASTER_KEY

    providers = {**env.kms.providers(), "local": {"key": LOCAL_MASTER_KEY}}
    opts = AutoEncryptionOpts(providers, KEY_VAULT, bypass_auto_encryption=True,
                              kms_tls_options=env.kms.tls_options())
    async with env.encryption(providers) as ce, AsyncMongoClient(
            env.uri, auto_encryption_opts=opts) as client_encrypted:
        key_id = await ce.create_data_key(provider, master_key=env.kms.master_key(provider),
                                          key_alt_names=[f"{provider}_altname"])
        assert isinstance(key_id, Binary) and key_id.subtype == 4
        keys = await env.client.keyvault.datakeys.find({"_id": key_id}).to_list()
        assert len(keys) == 1 and keys[0]["masterKey"]["provider"] == provider
        inserts = [e.command for e in env.events if isinstance(e, CommandStartedEvent)
                   and e.command_name == "insert"]
        assert inserts and inserts[-1]["writeConcern"] == {"w": "majority"}

        encrypted = await ce.encrypt(f"hello {provider}", DETERMINISTIC, key_id=key_id)
        assert encrypted.subtype == 6
        coll = client_encrypted.db.coll
        await coll.insert_one({"_id": provider, "value": encrypted})
        found = await coll.find_one({"_id": provider})
        assert found is not None and found["value"] == f"hello {provider}"

        by_name = await ce.encrypt(f"hello {provider}", DETERMINISTIC,
                                   key_alt_name=f"{provider}_altname")
        assert by_name == encrypted


# -- prose 7: custom endpoints ---------------------------------------------------------------

async def test_prose_7_aws_endpoint_with_and_without_port(env: Env, kms_certs: KmsCerts) -> None:
    """Cases 2 and 3: the endpoint with an explicit port works; "host" alone means 443, which
    a failed connection to 127.0.0.1:443 shows (nothing listens there)."""
    async with env.encryption() as ce:
        await _round_trip(ce, "aws", env.kms.master_key("aws"))
        no_port = dict(env.kms.master_key("aws") or {}, endpoint="127.0.0.1")
        with pytest.raises(EncryptionError) as info:
            await ce.create_data_key("aws", master_key=no_port)
    assert isinstance(info.value.cause, AutoReconnect)
    assert "127.0.0.1:443" in str(info.value)


async def test_prose_7_case_5_wrong_region_endpoint(env: Env, kms_certs: KmsCerts) -> None:
    async with AwsKms(kms_certs.context(), credentials={AWS_KEY_ID: AWS_SECRET},
                      region="us-east-2") as east_2, env.encryption() as ce:
        master_key = dict(env.kms.master_key("aws") or {}, endpoint=east_2.endpoint)
        with pytest.raises(EncryptionError, match="region"):
            await ce.create_data_key("aws", master_key=master_key)


@pytest.mark.parametrize("provider", CLOUD)
async def test_prose_7_cases_6_to_8_unresolvable_endpoints(env: Env, provider: str) -> None:
    """Case 6 (aws master key endpoint), 7 (azure identityPlatformEndpoint), 8 (gcp
    endpoint): "doesnotexist.invalid" fails to resolve, a network error, after
    libmongocrypt's retries."""
    providers = env.kms.providers()
    master_key = env.kms.master_key(provider)
    assert master_key is not None
    if provider == "aws":
        master_key["endpoint"] = "doesnotexist.invalid"
    elif provider == "azure":
        providers["azure"]["identityPlatformEndpoint"] = "doesnotexist.invalid:443"
    else:
        providers["gcp"]["endpoint"] = "doesnotexist.invalid:443"
    async with env.encryption(providers) as ce:
        with pytest.raises(EncryptionError) as info:
            await ce.create_data_key(provider, master_key=master_key)
    assert isinstance(info.value.cause, AutoReconnect)
    assert "doesnotexist.invalid" in str(info.value)


@pytest.mark.parametrize("provider", ["azure", "gcp"])
async def test_prose_7_cases_7_and_8_custom_endpoints_work(env: Env, provider: str) -> None:
    async with env.encryption() as ce:
        await _round_trip(ce, provider, env.kms.master_key(provider))


# -- prose 10: KMS TLS tests -----------------------------------------------------------------

async def test_prose_10_kms_tls(env: Env, kms_certs: KmsCerts) -> None:
    """The aws provider against the spec's two mock KMS servers (expired certificate, and a
    certificate for another host), both from the trusted test CA: each handshake fails on
    that one fault, and no request reaches the server. (Prose 11 repeats these checks per
    provider with client certificates.)"""
    files = kms_certs.files
    async with AwsKms(kms_certs.context(kms_certs.expired)) as expired, \
            AwsKms(kms_certs.context(files.server_wrong_host)) as wrong_host:
        async with env.encryption(tls=env.kms.tls_options("aws")) as client_encryption:
            for server, message in ((expired, "certificate has expired"),
                                    (wrong_host, "IP address mismatch")):
                master_key = {"region": "us-east-1", "key": AWS_ARN,
                              "endpoint": server.endpoint}
                with pytest.raises(EncryptionError, match=message) as info:
                    await client_encryption.create_data_key("aws", master_key=master_key)
                assert isinstance(info.value.cause, AutoReconnect)
                assert server.requests == []


# -- prose 11: KMS TLS options ---------------------------------------------------------------

@pytest.fixture
async def tls_servers(kms_certs: KmsCerts) -> AsyncIterator[dict[str, KmsHttpServer]]:
    """Per provider: one with an expired certificate, one for the wrong host, one that
    requires a client certificate (the spec's ports 9000, 9001, 9002)."""
    files = kms_certs.files
    contexts = {
        "expired": kms_certs.context(kms_certs.expired),
        "wrong_host": kms_certs.context(files.server_wrong_host),
        "client_cert": kms_certs.context(require_client_cert=True),
    }
    servers: dict[str, KmsHttpServer] = {}
    kinds: dict[str, type[KmsHttpServer]] = {"aws": AwsKms, "azure": AzureKms, "gcp": GcpKms}
    try:
        for provider, kind in kinds.items():
            for name, context in contexts.items():
                server = kind(context)
                await server.start()
                servers[f"{provider}/{name}"] = server
        yield servers
    finally:
        for server in servers.values():
            await server.close()


def _pointing_at(env: Env, provider: str, endpoint: str) -> tuple[dict[str, Any], Any]:
    """(providers, master key) that send ``provider``'s requests (token and key) to
    ``endpoint``."""
    providers = env.kms.providers()
    master_key = env.kms.master_key(provider)
    assert master_key is not None
    if provider == "azure":
        providers["azure"]["identityPlatformEndpoint"] = endpoint
        master_key["keyVaultEndpoint"] = endpoint
    else:
        master_key["endpoint"] = endpoint
        if provider == "gcp":
            providers["gcp"]["endpoint"] = endpoint
    return providers, master_key


@pytest.mark.parametrize("provider", CLOUD)
async def test_prose_11_kms_tls_options(env: Env, tls_servers: dict[str, KmsHttpServer],
                                        kms_certs: KmsCerts, provider: str) -> None:
    client_cert_server = tls_servers[f"{provider}/client_cert"]
    providers, master_key = _pointing_at(env, provider, client_cert_server.endpoint)
    ca_only = {provider: kms_certs.tls_options()}
    with_cert = {provider: kms_certs.tls_options(client_cert=True)}

    async with env.encryption(providers, tls={}) as no_tls_options:
        with pytest.raises(EncryptionError, match="certificate verify failed"):
            await no_tls_options.create_data_key(provider, master_key=master_key)
    async with env.encryption(providers, tls=ca_only) as no_client_cert:
        with pytest.raises(EncryptionError) as info:
            await no_client_cert.create_data_key(provider, master_key=master_key)
        assert isinstance(info.value.cause, AutoReconnect)
    assert client_cert_server.requests == []  # no handshake completed
    async with env.encryption(providers, tls=with_cert) as with_tls:
        # The handshake succeeds: the server answers (a simulated KMS accepts anything here).
        await with_tls.create_data_key(provider, master_key=master_key)
    assert client_cert_server.requests
    assert client_cert_server.requests[0].peer_certificate is not None

    expired = tls_servers[f"{provider}/expired"]
    providers, master_key = _pointing_at(env, provider, expired.endpoint)
    async with env.encryption(providers, tls=with_cert) as ce:
        with pytest.raises(EncryptionError, match="certificate has expired"):
            await ce.create_data_key(provider, master_key=master_key)
    wrong_host = tls_servers[f"{provider}/wrong_host"]
    providers, master_key = _pointing_at(env, provider, wrong_host.endpoint)
    async with env.encryption(providers, tls=with_cert) as ce:
        with pytest.raises(EncryptionError, match=r"IP address mismatch|hostname mismatch"):
            await ce.create_data_key(provider, master_key=master_key)


async def test_prose_11_case_5_ocsp_option_is_permitted(env: Env, kms_certs: KmsCerts) -> None:
    tls = {"aws": {**kms_certs.tls_options(), "tlsDisableOCSPEndpointCheck": True}}
    async with env.encryption(tls=tls) as ce:
        await _round_trip(ce, "aws", env.kms.master_key("aws"))


async def test_prose_11_case_6_named_providers_have_their_own_tls_options(
        env: Env, tls_servers: dict[str, KmsHttpServer], kms_certs: KmsCerts) -> None:
    endpoint = tls_servers["aws/client_cert"].endpoint
    credentials = env.kms.providers()["aws"]
    providers = {"aws:no_client_cert": credentials, "aws:with_tls": credentials}
    tls = {"aws:no_client_cert": kms_certs.tls_options(),
           "aws:with_tls": kms_certs.tls_options(client_cert=True)}
    master_key = dict(env.kms.master_key("aws") or {}, endpoint=endpoint)
    async with env.encryption(providers, tls=tls) as ce:
        with pytest.raises(EncryptionError):
            await ce.create_data_key("aws:no_client_cert", master_key=master_key)
        await ce.create_data_key("aws:with_tls", master_key=master_key)


@pytest.mark.parametrize("option", ["tlsInsecure", "tlsAllowInvalidCertificates",
                                    "tlsAllowInvalidHostnames",
                                    "tlsDisableCertificateRevocationCheck"])
async def test_insecure_tls_options_are_prohibited(env: Env, option: str) -> None:
    with pytest.raises(ConfigurationError, match="Insecure TLS options prohibited"):
        env.encryption(tls={"aws": {option: True}})


async def test_tls_is_required(env: Env) -> None:
    with pytest.raises(ConfigurationError, match="TLS is required"):
        env.encryption(tls={"aws": {"tls": False}})


async def test_kms_tls_options_apply_to_automatic_decryption(env: Env) -> None:
    async with env.encryption() as ce:
        key_id = await ce.create_data_key("gcp", master_key=env.kms.master_key("gcp"))
        encrypted = await ce.encrypt("auto", DETERMINISTIC, key_id=key_id)
    await env.client.db.coll.insert_one({"_id": 1, "v": encrypted})
    opts = AutoEncryptionOpts(env.kms.providers(), KEY_VAULT, bypass_auto_encryption=True,
                              kms_tls_options=env.kms.tls_options())
    async with AsyncMongoClient(env.uri, auto_encryption_opts=opts) as decrypting:
        assert await decrypting.db.coll.find_one({"_id": 1}) == {"_id": 1, "v": "auto"}


# -- prose 15: on-demand AWS credentials -----------------------------------------------------

async def test_prose_15_on_demand_aws_credentials(env: Env,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    async with env.encryption({"aws": {}}) as ce:
        with pytest.raises(ConfigurationError, match="on-demand"):
            await ce.create_data_key("aws", master_key=env.kms.master_key("aws"))
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
        await _round_trip(ce, "aws", env.kms.master_key("aws"))


async def test_on_demand_azure_and_gcp_ask_their_metadata_service(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty azure/gcp providers are filled from the cloud's metadata service (here a closed
    port: the error names the provider and the service; tests/encryption/
    test_on_demand_credentials.py has the answers)."""
    from asyncmongo.encryption import on_demand

    monkeypatch.setattr(on_demand, "AZURE_IMDS_URL", "http://127.0.0.1:9/metadata/token")
    monkeypatch.setattr(on_demand, "GCP_TOKEN_URL", "http://127.0.0.1:9/token")
    monkeypatch.setattr(on_demand, "_azure_cache", None)
    for provider in ("azure", "gcp"):
        async with env.encryption({provider: {}}) as ce:
            with pytest.raises(ConfigurationError,
                               match=f"on-demand '{provider}' KMS credentials.*no answer"):
                await ce.create_data_key(provider, master_key=env.kms.master_key(provider))


# -- prose 24: KMS retries -------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["network", "http"])
@pytest.mark.parametrize("provider", CLOUD)
async def test_prose_24_cases_1_and_2_retry(env: Env, provider: str, kind: str) -> None:
    server: KmsHttpServer = getattr(env.kms, provider)
    async with env.encryption() as ce:
        server.fail(kind)
        key_id = await ce.create_data_key(provider, master_key=env.kms.master_key(provider))
    async with env.encryption() as ce:  # a new one: decrypting the data key asks the KMS
        server.fail(kind)
        encrypted = await ce.encrypt(123, DETERMINISTIC, key_id=key_id)
        assert await ce.decrypt(encrypted) == 123


@pytest.mark.parametrize("provider", CLOUD)
async def test_prose_24_case_3_too_many_retries(env: Env, provider: str) -> None:
    server: KmsHttpServer = getattr(env.kms, provider)
    server.fail("network", 4)
    async with env.encryption() as ce:
        with pytest.raises(EncryptionError) as info:
            await ce.create_data_key(provider, master_key=env.kms.master_key(provider))
    assert isinstance(info.value.cause, AutoReconnect)


def test_certificates_exist(kms_certs: KmsCerts) -> None:
    assert Path(kms_certs.expired).exists()


# -- timeouts and cancellation ---------------------------------------------------------------

async def test_timeout_ms_bounds_the_kms_request(env: Env) -> None:
    env.kms.aws.delay_s = 5.0
    ce = AsyncClientEncryption(env.kms.providers(), KEY_VAULT, env.client, CodecOptions(),
                               kms_tls_options=env.kms.tls_options(), timeout_ms=300)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with ce:
        with pytest.raises(EncryptionError, match="timeoutMS expired") as info:
            await ce.create_data_key("aws", master_key=env.kms.master_key("aws"))
    assert info.value.timeout
    assert loop.time() - started < 2.0
    assert len(env.kms.aws.requests) == 1  # cut by timeoutMS: not retried
    env.kms.aws.delay_s = 0.0


async def test_timeout_ms_must_be_a_non_negative_int(env: Env) -> None:
    with pytest.raises(InvalidArgument, match="timeout_ms"):
        AsyncClientEncryption({}, KEY_VAULT, env.client, CodecOptions(), timeout_ms=-1)


async def test_cancelled_kms_request_leaves_no_connection(env: Env) -> None:
    env.kms.gcp.delay_s = 5.0
    async with env.encryption() as ce:
        task = asyncio.create_task(
            ce.create_data_key("gcp", master_key=env.kms.master_key("gcp")))
        await env.kms.gcp.wait_for_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await env.client.keyvault.datakeys.count_documents({}) == 0
    env.kms.gcp.delay_s = 0.0
    async with env.encryption() as ce:  # the KMS and the key vault still work
        await _round_trip(ce, "gcp", env.kms.master_key("gcp"))
