"""parse(): hosts, userinfo, options, keywords, defaults, warnings, secrets."""

from __future__ import annotations

import warnings

import pytest

from asyncmongo.core.auth.credential import MongoCredential, build_credential
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.uri import ClientOptions, parse, parse_lenient
from asyncmongo.errors import (
    ConfigurationError,
    ConfigurationWarning,
    DeprecatedOptionWarning,
    InvalidURI,
)


def test_defaults() -> None:
    o = parse("mongodb://localhost")
    assert o.hosts == (("localhost", 27017),)
    assert (o.heartbeat_frequency_ms, o.local_threshold_ms) == (10_000, 15)
    assert (o.server_selection_timeout_ms, o.connect_timeout_ms) == (30_000, 20_000)
    assert (o.max_pool_size, o.min_pool_size, o.max_connecting) == (100, 0, 2)
    assert o.socket_timeout_ms is None and o.timeout_ms is None
    assert o.read_preference == "primary" and o.read_preference_tags == ()
    assert o.max_staleness_seconds == -1
    assert o.read_concern == ReadConcern() and o.write_concern == WriteConcern()
    assert o.retry_reads and o.retry_writes and not o.tls
    assert o.credential is None and o.database is None and o.direct_connection is None
    assert o.server_monitoring_mode == "auto" and o.options == {}


def test_hosts_ipv6_and_sockets() -> None:
    o = parse("mongodb://EXAMPLE.com:27018,[::1],%2Ftmp%2FMongo.sock,rel%2Fa.sock/db.coll")
    assert o.hosts == (
        ("example.com", 27018),
        ("::1", 27017),
        ("/tmp/Mongo.sock", None),
        ("rel/a.sock", None),
    )
    assert o.database == "db.coll"


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://[::1",
        "mongodb://[nothex]:1",
        "mongodb://[::1]x",
        "mongodb://host:99999999999999999999999",
        "mongodb://a,,b",
        "mongodb://h/d b",
        "mongodb://h/?a=%zz",
        "mongodb://h/?=1",
        "mongodb://h/%FF",
        "mongodb+srv://",
        "mongodb+srv://a..b",
        "mongodb+srv://[::1]",
        "mongodb://u:p@",
    ],
)
def test_malformed(uri: str) -> None:
    with pytest.raises(InvalidURI):
        parse(uri)


def test_options_typed_and_case_insensitive() -> None:
    o = parse(
        "mongodb://h/?REPLICASET=rs&connecttimeoutms=0&socketTimeoutMS=0&maxIdleTimeMS=0"
        "&readPreference=SECONDARYpreferred&readPreferenceTags=dc:ny,rack:1&readPreferenceTags="
        "&maxStalenessSeconds=120&w=majority&wTimeoutMS=5&journal=true&readConcernLevel=local"
        "&compressors=zstd,snappy&zlibCompressionLevel=9&appname=app&retryWrites=false"
        "&timeoutMS=0&serverMonitoringMode=poll&directConnection=false"
    )
    assert o.replica_set == "rs"
    assert o.connect_timeout_ms is None and o.socket_timeout_ms is None
    assert o.max_idle_time_ms is None
    assert o.read_preference == "secondaryPreferred"
    assert [dict(t) for t in o.read_preference_tags] == [{"dc": "ny", "rack": "1"}, {}]
    assert o.max_staleness_seconds == 120
    assert o.write_concern == WriteConcern("majority", 5, True)
    assert o.read_concern.level == "local"
    assert o.compressors == ("zstd", "snappy") and o.zlib_compression_level == 9
    assert (o.appname, o.retry_writes, o.timeout_ms) == ("app", False, 0)
    assert o.server_monitoring_mode == "poll" and o.direct_connection is False


def test_keywords_override_the_uri_in_any_spelling() -> None:
    o = parse(
        "mongodb://h/?w=1&replicaSet=a&connectTimeoutMS=1",
        w="majority",
        replica_set="b",
        CONNECTTIMEOUTMS=7,
        read_preference_tags=[{"dc": "ny"}],
        read_preference="nearest",
        retry_reads="false",
        server_api={"version": "1"},
    )
    assert o.write_concern.w == "majority" and o.replica_set == "b"
    assert o.connect_timeout_ms == 7 and o.retry_reads is False
    assert [dict(t) for t in o.read_preference_tags] == [{"dc": "ny"}]
    assert o.server_api == {"version": "1"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"nonsense": 1},
        {"max_pool_size": -1},
        {"heartbeat_frequency_ms": 499},
        {"tls": "maybe"},
        {"w": -1},
        {"connect_timeout_ms": 1.5},
        {"retry_writes": 1},
    ],
)
def test_bad_keywords_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        parse("mongodb://h", **kwargs)


def test_invalid_values_raise_in_parse_and_warn_in_parse_lenient() -> None:
    uri = "mongodb://h/?maxPoolSize=-1&heartbeatFrequencyMS=abc"
    with pytest.raises(ConfigurationError, match="maxPoolSize"):
        parse(uri)
    with pytest.warns(ConfigurationWarning) as record:
        o = parse_lenient(uri)
    assert len(record) == 2 and o.max_pool_size == 100


def test_unknown_repeated_and_deprecated_keys_warn() -> None:
    with pytest.warns(ConfigurationWarning, match="Unsupported option 'foo'"):
        parse("mongodb://h/?foo=1")
    with pytest.warns(ConfigurationWarning, match="repeated"):
        assert parse("mongodb://h/?appname=a&appname=b").appname == "b"
    with pytest.warns(DeprecatedOptionWarning, match="replaced with 'wTimeoutMS'"):
        assert parse("mongodb://h/?wtimeout=5").write_concern.wtimeout_ms == 5
    with pytest.warns(DeprecatedOptionWarning, match="ignored"):
        assert parse("mongodb://h/?wtimeout=5&wTimeoutMS=6").write_concern.wtimeout_ms == 6
    with pytest.warns(DeprecatedOptionWarning):
        o = parse("mongodb://u@h/?authMechanism=GSSAPI&gssapiServiceName=svc")
    assert o.credential is not None
    assert o.credential.mechanism_properties["SERVICE_NAME"] == "svc"


def test_no_warning_for_a_clean_uri() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse("mongodb://u:p@h1,h2/db?replicaSet=rs&tls=true&ssl=true&w=2")


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://h1,h2/?directConnection=true",
        "mongodb+srv://a.b.c/?directConnection=true",
        "mongodb://h/?srvMaxHosts=1",
        "mongodb://h/?tls=true&ssl=false",
        "mongodb://h/?tlsInsecure=true&tlsAllowInvalidHostnames=false",
        "mongodb://h/?readPreferenceTags=dc:ny",
        "mongodb://h/?maxStalenessSeconds=100",
        "mongodb://h/?minPoolSize=10&maxPoolSize=5",
        "mongodb://h/?w=0&journal=true",
        "mongodb://h/?loadBalanced=true&replicaSet=rs",
        "mongodb://h/?authMechanism=NOPE",
    ],
)
def test_conflicts(uri: str) -> None:
    with pytest.raises(ConfigurationError):
        parse(uri)


def test_tls_rules() -> None:
    assert parse("mongodb://h/?tlsCAFile=ca.pem").tls is True  # implied by a tls* option
    assert parse("mongodb://h/?tlsCAFile=ca.pem&tls=false").tls is False
    assert parse("mongodb+srv://a.b.c").tls is True
    insecure = parse("mongodb://h/?tlsInsecure=true")
    assert insecure.tls_allow_invalid_certificates and insecure.tls_allow_invalid_hostnames
    assert insecure.tls_disable_ocsp_endpoint_check
    assert parse("mongodb://h/?tlsAllowInvalidHostnames=true&tlsAllowInvalidCertificates=true").tls


def test_srv_uri_is_not_resolved_by_parse() -> None:
    o = parse("mongodb+srv://Cluster0.Example.com/db?srvServiceName=svc&srvMaxHosts=2")
    assert (o.is_srv, o.srv_host, o.hosts) == (True, "cluster0.example.com", ())
    assert (o.srv_service_name, o.srv_max_hosts, o.database) == ("svc", 2, "db")


def test_credentials_and_sources() -> None:
    assert parse("mongodb://h/db?authSource=x").credential is None
    cred = parse("mongodb://u%40x:p%3Aw@h/db").credential
    assert cred == MongoCredential(None, "db", "u@x", "p:w")
    assert parse("mongodb://u:p@h").credential == MongoCredential(None, "admin", "u", "p")
    plain = parse("mongodb://u:p@h/?authMechanism=plain").credential
    assert plain is not None and (plain.mechanism, plain.source) == ("PLAIN", "$external")
    x509 = parse("mongodb://h/?authMechanism=MONGODB-X509").credential
    assert x509 is not None and x509.username is None and x509.source == "$external"


def test_credential_rules_in_code() -> None:
    def build(**kw: object) -> MongoCredential | None:
        base: dict[str, object] = dict(
            mechanism=None,
            username=None,
            password=None,
            source=None,
            database=None,
            mechanism_properties=None,
            userinfo_given=False,
        )
        base.update(kw)
        return build_credential(**base)  # type: ignore[arg-type]

    callback = object()
    oidc = build(mechanism="MONGODB-OIDC", mechanism_properties={"oidc_callback": callback})
    assert oidc is not None and oidc.mechanism_properties["OIDC_CALLBACK"] is callback
    with pytest.raises(ConfigurationError):
        build(
            mechanism="MONGODB-OIDC",
            mechanism_properties={"ENVIRONMENT": "test", "OIDC_CALLBACK": callback},
        )
    with pytest.raises(ConfigurationError):
        build(
            mechanism="SCRAM-SHA-256", username="u", password="p", mechanism_properties={"X": "1"}
        )
    gss = build(
        mechanism="GSSAPI", username="u", mechanism_properties={"canonicalize_host_name": True}
    )
    assert gss is not None and gss.mechanism_properties["CANONICALIZE_HOST_NAME"] == (
        "forwardAndReverse"
    )


SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(
    "uri",
    [
        f"mongodb://user:{SECRET}@h/?authMechanism=MONGODB-X509",
        f"mongodb://user:{SECRET}@h:bad",
        f"mongodb://user:{SECRET}/x@h/db",
        f"mongodb://user:{SECRET}%zz@h",
        f"mongodb://user:{SECRET}:x@h",
        f"mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword={SECRET}&proxyPassword={SECRET}",
        f"mongodb://h/?tlsCertificateKeyFilePassword={SECRET}&tlsCertificateKeyFilePassword=",
        f"mongodb://user:{SECRET}@h/?authMechanism=MONGODB-AWS",
    ],
)
def test_the_password_never_appears_in_errors(uri: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse(uri)
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value)


def test_the_password_never_appears_in_reprs() -> None:
    o = parse(
        f"mongodb://user:{SECRET}@h/?tlsCertificateKeyFilePassword={SECRET}"
        f"&proxyHost=p&proxyUsername=u&proxyPassword={SECRET}"
    )
    assert isinstance(o, ClientOptions)
    assert SECRET not in repr(o) and SECRET not in str(o)
    assert SECRET not in repr(o.credential)
    assert o.credential is not None and o.credential.password == SECRET
    assert o.tls_certificate_key_file_password == SECRET and o.proxy_password == SECRET
    assert "<hidden>" in repr(o)


def test_options_are_frozen() -> None:
    o = parse("mongodb://h/?w=1")
    with pytest.raises(AttributeError):
        o.hosts = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        o.options["w"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    "properties",
    ["ENVIRONMENT:test,ALLOWED_HOSTS:evil.com", "OIDC_CALLBACK:mod.fn", "OIDC_HUMAN_CALLBACK:x"],
)
def test_oidc_code_properties_cannot_come_from_the_uri(properties: str) -> None:
    with pytest.raises(ConfigurationError, match="in code"):
        parse(f"mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties={properties}")


def test_oidc_code_properties_from_keywords() -> None:
    class Callback:
        def fetch(self) -> None: ...

    o = parse(
        "mongodb://h/?authMechanism=MONGODB-OIDC",
        auth_mechanism_properties={"OIDC_HUMAN_CALLBACK": Callback(), "ALLOWED_HOSTS": ["a"]},
    )
    assert o.credential is not None and o.credential.mechanism == "MONGODB-OIDC"


def test_username_and_password_keywords() -> None:
    o = parse("mongodb://old:pw@h/db", username="new", password=SECRET)
    assert o.credential == MongoCredential(None, "db", "new", SECRET)
    assert parse("mongodb://h", username="u", password="p").credential is not None
    with pytest.raises(ConfigurationError) as info:
        parse("mongodb://h", username="u", password=12345678)
    assert "12345678" not in str(info.value)
