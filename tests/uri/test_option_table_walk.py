"""No URI option is silently ignored: a walk over the whole option table (issue #17, item 5).

Every option asyncmongo's parser accepts is in exactly one of three lists here, and the test
fails for a new option that is in none:

- ``EFFECTS``: setting it changes the client's configuration (``client.options``), and the
  setting it lands in is read by some component beyond the parser (checked in the source: an
  attribute read of that name outside ``asyncmongo/core/uri``). What each one does is tested
  where that component is.
- ``REFUSED``: values asyncmongo cannot honour raise ConfigurationError naming the option.
- ``MATCHES_BEHAVIOUR``: values that ask for what asyncmongo always does (the refused
  opposite value is in ``REFUSED``).
"""

from __future__ import annotations

import ast
import operator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.uri.table import OPTIONS
from asyncmongo.errors import ConfigurationError

PACKAGE = Path(__file__).resolve().parents[2] / "asyncmongo"
BASE = "mongodb://u:p@h1:27017/"

SRV = "mongodb+srv://u:p@cluster.example.com/"

#: option -> (query string setting a non-default value, the ClientOptions path it lands in);
#: the value is compared with the same query without the option (its companions kept), and a
#: query starting with mongodb+srv:// is a whole connection string.
EFFECTS: dict[str, tuple[str, str]] = {
    "appname": ("appname=walk", "appname"),
    "authMechanism": ("authMechanism=PLAIN", "credential.mechanism"),
    "authMechanismProperties": (
        "authMechanism=GSSAPI&authMechanismProperties=SERVICE_NAME:other",
        "credential.mechanism_properties"),
    "authSource": ("authSource=other", "credential.source"),
    "compressors": ("compressors=zlib", "compressors"),
    "connectTimeoutMS": ("connectTimeoutMS=1234", "connect_timeout_ms"),
    "directConnection": ("directConnection=true", "direct_connection"),
    "enableOverloadRetargeting": ("enableOverloadRetargeting=true",
                                  "enable_overload_retargeting"),
    "heartbeatFrequencyMS": ("heartbeatFrequencyMS=1234", "heartbeat_frequency_ms"),
    "journal": ("journal=true", "write_concern"),
    "loadBalanced": ("loadBalanced=true", "load_balanced"),
    "localThresholdMS": ("localThresholdMS=99", "local_threshold_ms"),
    "maxAdaptiveRetries": ("maxAdaptiveRetries=5", "max_adaptive_retries"),
    "maxConnecting": ("maxConnecting=7", "max_connecting"),
    "maxIdleTimeMS": ("maxIdleTimeMS=1234", "max_idle_time_ms"),
    "maxPoolSize": ("maxPoolSize=7", "max_pool_size"),
    "maxStalenessSeconds": ("readPreference=secondary&maxStalenessSeconds=120",
                            "max_staleness_seconds"),
    "minPoolSize": ("minPoolSize=3", "min_pool_size"),
    "proxyHost": ("proxyHost=proxy", "proxy_host"),
    "proxyPassword": ("proxyHost=proxy&proxyUsername=a&proxyPassword=b", "proxy_password"),
    "proxyPort": ("proxyHost=proxy&proxyPort=1234", "proxy_port"),
    "proxyUsername": ("proxyHost=proxy&proxyUsername=a&proxyPassword=b", "proxy_username"),
    "readConcernLevel": ("readConcernLevel=majority", "read_concern"),
    "readPreference": ("readPreference=secondary", "read_preference"),
    "readPreferenceTags": ("readPreference=secondary&readPreferenceTags=dc:ny",
                           "read_preference_tags"),
    "replicaSet": ("replicaSet=rs", "replica_set"),
    "retryReads": ("retryReads=false", "retry_reads"),
    "retryWrites": ("retryWrites=false", "retry_writes"),
    "serverMonitoringMode": ("serverMonitoringMode=poll", "server_monitoring_mode"),
    "serverSelectionTimeoutMS": ("serverSelectionTimeoutMS=1234",
                                 "server_selection_timeout_ms"),
    "socketTimeoutMS": ("socketTimeoutMS=1234", "socket_timeout_ms"),
    "srvMaxHosts": (f"{SRV}?srvMaxHosts=2", "srv_max_hosts"),
    "srvServiceName": (f"{SRV}?srvServiceName=other", "srv_service_name"),
    "timeoutMS": ("timeoutMS=1234", "timeout_ms"),
    "tls": ("tls=true", "tls"),
    "tlsAllowInvalidCertificates": ("tlsAllowInvalidCertificates=true",
                                    "tls_allow_invalid_certificates"),
    "tlsAllowInvalidHostnames": ("tlsAllowInvalidHostnames=true",
                                 "tls_allow_invalid_hostnames"),
    "tlsCAFile": ("tlsCAFile=/ca.pem", "tls_ca_file"),
    "tlsCertificateKeyFile": ("tlsCertificateKeyFile=/key.pem", "tls_certificate_key_file"),
    "tlsCertificateKeyFilePassword": ("tlsCertificateKeyFilePassword=pw",
                                      "tls_certificate_key_file_password"),
    "tlsInsecure": ("tlsInsecure=true", "tls_insecure"),
    "uuidRepresentation": ("uuidRepresentation=standard", "uuid_representation"),
    "w": ("w=majority", "write_concern"),
    "waitQueueTimeoutMS": ("waitQueueTimeoutMS=1234", "wait_queue_timeout_ms"),
    "wTimeoutMS": ("wTimeoutMS=1234", "write_concern"),
    "zlibCompressionLevel": ("compressors=zlib&zlibCompressionLevel=9",
                             "zlib_compression_level"),
}

#: option -> the query string asyncmongo refuses
REFUSED: dict[str, str] = {
    "serverSelectionTryOnce": "serverSelectionTryOnce=true",
    "tlsDisableOCSPEndpointCheck": "tlsDisableOCSPEndpointCheck=false",
    "tlsDisableCertificateRevocationCheck": "tlsDisableCertificateRevocationCheck=false",
}

#: option -> (the accepted query string, why it needs no setting of its own)
MATCHES_BEHAVIOUR: dict[str, tuple[str, str]] = {
    "serverSelectionTryOnce": (
        "serverSelectionTryOnce=false",
        "selection always waits for the background monitors up to serverSelectionTimeoutMS"),
    "tlsDisableOCSPEndpointCheck": (
        "tlsDisableOCSPEndpointCheck=true", "no OCSP responder is ever contacted"),
    "tlsDisableCertificateRevocationCheck": (
        "tlsDisableCertificateRevocationCheck=true", "no revocation status is ever checked"),
}


def test_every_option_of_the_table_is_walked() -> None:
    walked = set(EFFECTS) | set(REFUSED) | set(MATCHES_BEHAVIOUR)
    assert sorted(set(OPTIONS) - walked) == [], "options with no known effect"
    assert sorted(walked - set(OPTIONS)) == [], "entries for options the table lacks"
    assert set(REFUSED) == set(MATCHES_BEHAVIOUR)


def client_options(query: str) -> Any:
    base, _, query = query.rpartition("?") if query.startswith(SRV) else (BASE, "", query)
    return AsyncMongoClient(f"{base}?{query}" if query else base).options


def without(query: str, name: str) -> str:
    """``query`` without ``name`` and, for a proxy credential, without its partner (the two
    go together)."""
    drop = {name, "proxyUsername", "proxyPassword"} if name.startswith("proxyU") or (
        name.startswith("proxyPass")) else {name}
    head, sep, tail = query.rpartition("?") if query.startswith(SRV) else ("", "", query)
    kept = "&".join(p for p in tail.split("&") if p.partition("=")[0] not in drop)
    return f"{head}{sep}{kept}"


@pytest.mark.parametrize("name", sorted(EFFECTS))
def test_the_option_changes_the_configuration(name: str) -> None:
    query, path = EFFECTS[name]
    read = operator.attrgetter(path)
    assert read(client_options(query)) != read(client_options(without(query, name))), (
        f"{name} did not change {path}")


@cache
def attributes_read_beyond_the_parser() -> frozenset[str]:
    names: set[str] = set()
    for source in PACKAGE.rglob("*.py"):
        if "core/uri" in source.as_posix() or "/testing/" in source.as_posix():
            continue
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                names.add(node.attr)
    return frozenset(names)


@pytest.mark.parametrize("name", sorted(EFFECTS))
def test_a_component_reads_the_setting(name: str) -> None:
    _, path = EFFECTS[name]
    unread = [part for part in path.split(".") if part not in attributes_read_beyond_the_parser()]
    assert unread == [], f"{name}: nothing outside the parser reads {unread}"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_values_asyncmongo_cannot_honour_are_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        AsyncMongoClient(f"{BASE}?{REFUSED[name]}")
    with pytest.raises(ConfigurationError, match=name):
        key, _, value = REFUSED[name].partition("=")
        AsyncMongoClient(BASE, **{key: value == "true"})


@pytest.mark.parametrize("name", sorted(MATCHES_BEHAVIOUR))
def test_values_that_ask_for_the_behaviour_are_accepted(name: str) -> None:
    query, _reason = MATCHES_BEHAVIOUR[name]
    assert client_options(query).options[name] == (query.endswith("=true"))
