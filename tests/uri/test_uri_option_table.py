"""No URI option is silently ignored: a walk over the whole option table.

Every option the table accepts either has an effect, shown by a typed setting of the client
(``client.options``, or its codec options for uuidRepresentation) changing to the value
given, or raises ConfigurationError naming it for the values asyncmongo cannot honour. A new
option fails the first test until it is put in one of the two tables below; the last test
checks that the typed settings are read by the driver outside the parser (a setting nobody
reads would be an option ignored one step later).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.core.uri.client_options import ClientOptions
from asyncmongo.core.uri.table import OPTIONS
from asyncmongo.errors import ConfigurationError

PACKAGE = Path(__file__).resolve().parents[2] / "asyncmongo"

Read = Callable[[AsyncMongoClient[Any]], Any]


def _credential(name: str) -> Read:
    return lambda c: getattr(c.options.credential, name)


#: option -> (connection string giving it, what it sets, the value expected there)
EFFECTS: dict[str, tuple[str, Read, Any]] = {
    "appname": ("mongodb://h/?appname=app", lambda c: c.options.appname, "app"),
    "authMechanism": ("mongodb://u:p@h/?authMechanism=PLAIN", _credential("mechanism"), "PLAIN"),
    "authMechanismProperties": (
        "mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=SERVICE_NAME:other",
        lambda c: c.options.credential.mechanism_properties["SERVICE_NAME"],
        "other",
    ),
    "authSource": ("mongodb://u:p@h/?authSource=users", _credential("source"), "users"),
    "compressors": ("mongodb://h/?compressors=zlib", lambda c: c.options.compressors, ("zlib",)),
    "connectTimeoutMS": (
        "mongodb://h/?connectTimeoutMS=1234",
        lambda c: c.options.connect_timeout_ms,
        1234,
    ),
    "directConnection": (
        "mongodb://h/?directConnection=true",
        lambda c: c.options.direct_connection,
        True,
    ),
    "enableOverloadRetargeting": (
        "mongodb://h/?enableOverloadRetargeting=true",
        lambda c: c.options.enable_overload_retargeting,
        True,
    ),
    "heartbeatFrequencyMS": (
        "mongodb://h/?heartbeatFrequencyMS=600",
        lambda c: c.options.heartbeat_frequency_ms,
        600,
    ),
    "journal": ("mongodb://h/?journal=true", lambda c: c.options.write_concern.journal, True),
    "loadBalanced": ("mongodb://h/?loadBalanced=true", lambda c: c.options.load_balanced, True),
    "localThresholdMS": (
        "mongodb://h/?localThresholdMS=7",
        lambda c: c.options.local_threshold_ms,
        7,
    ),
    "maxAdaptiveRetries": (
        "mongodb://h/?maxAdaptiveRetries=5",
        lambda c: c.options.max_adaptive_retries,
        5,
    ),
    "maxConnecting": ("mongodb://h/?maxConnecting=5", lambda c: c.options.max_connecting, 5),
    "maxIdleTimeMS": (
        "mongodb://h/?maxIdleTimeMS=1000",
        lambda c: c.options.max_idle_time_ms,
        1000,
    ),
    "maxPoolSize": ("mongodb://h/?maxPoolSize=7", lambda c: c.options.max_pool_size, 7),
    "maxStalenessSeconds": (
        "mongodb://h/?readPreference=secondary&maxStalenessSeconds=120",
        lambda c: c.options.max_staleness_seconds,
        120,
    ),
    "minPoolSize": ("mongodb://h/?minPoolSize=3", lambda c: c.options.min_pool_size, 3),
    "proxyHost": ("mongodb://h/?proxyHost=proxy", lambda c: c.options.proxy_host, "proxy"),
    "proxyPassword": (
        "mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=pw",
        lambda c: c.options.proxy_password,
        "pw",
    ),
    "proxyPort": ("mongodb://h/?proxyHost=p&proxyPort=1081", lambda c: c.options.proxy_port, 1081),
    "proxyUsername": (
        "mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=pw",
        lambda c: c.options.proxy_username,
        "u",
    ),
    "readConcernLevel": (
        "mongodb://h/?readConcernLevel=majority",
        lambda c: c.options.read_concern.level,
        "majority",
    ),
    "readPreference": (
        "mongodb://h/?readPreference=secondary",
        lambda c: c.options.read_preference,
        "secondary",
    ),
    "readPreferenceTags": (
        "mongodb://h/?readPreference=secondary&readPreferenceTags=dc:ny",
        lambda c: c.options.read_preference_tags,
        ({"dc": "ny"},),
    ),
    "replicaSet": ("mongodb://h/?replicaSet=rs0", lambda c: c.options.replica_set, "rs0"),
    "retryReads": ("mongodb://h/?retryReads=false", lambda c: c.options.retry_reads, False),
    "retryWrites": ("mongodb://h/?retryWrites=false", lambda c: c.options.retry_writes, False),
    "serverMonitoringMode": (
        "mongodb://h/?serverMonitoringMode=poll",
        lambda c: c.options.server_monitoring_mode,
        "poll",
    ),
    "serverSelectionTimeoutMS": (
        "mongodb://h/?serverSelectionTimeoutMS=1234",
        lambda c: c.options.server_selection_timeout_ms,
        1234,
    ),
    "socketTimeoutMS": (
        "mongodb://h/?socketTimeoutMS=1234",
        lambda c: c.options.socket_timeout_ms,
        1234,
    ),
    "srvMaxHosts": (
        "mongodb+srv://cluster.example.com/?srvMaxHosts=2",
        lambda c: c.options.srv_max_hosts,
        2,
    ),
    "srvServiceName": (
        "mongodb+srv://cluster.example.com/?srvServiceName=custom",
        lambda c: c.options.srv_service_name,
        "custom",
    ),
    "timeoutMS": ("mongodb://h/?timeoutMS=1234", lambda c: c.options.timeout_ms, 1234),
    "tls": ("mongodb://h/?tls=true", lambda c: c.options.tls, True),
    "tlsAllowInvalidCertificates": (
        "mongodb://h/?tlsAllowInvalidCertificates=true",
        lambda c: c.options.tls_allow_invalid_certificates,
        True,
    ),
    "tlsAllowInvalidHostnames": (
        "mongodb://h/?tlsAllowInvalidHostnames=true",
        lambda c: c.options.tls_allow_invalid_hostnames,
        True,
    ),
    "tlsCAFile": ("mongodb://h/?tlsCAFile=/ca.pem", lambda c: c.options.tls_ca_file, "/ca.pem"),
    "tlsCertificateKeyFile": (
        "mongodb://h/?tlsCertificateKeyFile=/c.pem",
        lambda c: c.options.tls_certificate_key_file,
        "/c.pem",
    ),
    "tlsCertificateKeyFilePassword": (
        "mongodb://h/?tlsCertificateKeyFile=/c.pem&tlsCertificateKeyFilePassword=pw",
        lambda c: c.options.tls_certificate_key_file_password,
        "pw",
    ),
    "tlsInsecure": ("mongodb://h/?tlsInsecure=true", lambda c: c.options.tls_insecure, True),
    "uuidRepresentation": (
        "mongodb://h/?uuidRepresentation=standard",
        lambda c: c.codec_options.uuid_representation,
        4,
    ),  # STANDARD
    "w": ("mongodb://h/?w=majority", lambda c: c.options.write_concern.w, "majority"),
    "waitQueueTimeoutMS": (
        "mongodb://h/?waitQueueTimeoutMS=1234",
        lambda c: c.options.wait_queue_timeout_ms,
        1234,
    ),
    "wTimeoutMS": (
        "mongodb://h/?wTimeoutMS=1234",
        lambda c: c.options.write_concern.wtimeout_ms,
        1234,
    ),
    "zlibCompressionLevel": (
        "mongodb://h/?compressors=zlib&zlibCompressionLevel=5",
        lambda c: c.options.zlib_compression_level,
        5,
    ),
}

#: option -> (a value asyncmongo refuses, the one value describing what it does instead)
REFUSED: dict[str, tuple[str, str]] = {
    "tlsDisableOCSPEndpointCheck": ("false", "true"),
    "tlsDisableCertificateRevocationCheck": ("false", "true"),
    "serverSelectionTryOnce": ("true", "false"),
}

#: ClientOptions fields of the REFUSED options: the accepted value is what the driver does
#: without reading them. ``options`` is the raw mapping (check_supported reads it).
UNREAD_FIELDS = {
    "tls_disable_ocsp_endpoint_check",
    "tls_disable_certificate_revocation_check",
    "server_selection_try_once",
}


def test_every_option_of_the_table_is_walked() -> None:
    assert set(EFFECTS).isdisjoint(REFUSED)
    assert set(OPTIONS) == set(EFFECTS) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(EFFECTS))
def test_the_option_sets_the_clients_setting(name: str) -> None:
    uri, read, expected = EFFECTS[name]
    base = uri.split("?", 1)[0]
    default = read(AsyncMongoClient(base)) if "@" not in base else None
    assert read(AsyncMongoClient(uri)) == expected
    assert default != expected, f"{name}: the sample value is the default, it proves nothing"
    # the same through a keyword argument, the other way to give it
    query = dict(part.split("=", 1) for part in uri.split("?", 1)[1].split("&"))
    value = query.pop(name)
    rest = "&".join(f"{key}={val}" for key, val in query.items())
    keyword = AsyncMongoClient(f"{base}?{rest}" if rest else base, **{name: _typed(name, value)})
    assert read(keyword) == expected


def _typed(name: str, text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if text.isdigit():
        return int(text)
    if name == "authMechanismProperties":
        key, _, value = text.partition(":")
        return {key: value}
    if name == "readPreferenceTags":
        return [dict([text.split(":")])]
    return text


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_option_is_refused_naming_it(name: str) -> None:
    refused, accepted = REFUSED[name]
    with pytest.raises(ConfigurationError, match=f"^{name}={refused} is not supported: "):
        AsyncMongoClient(f"mongodb://h/?tls=true&{name}={refused}")
    AsyncMongoClient(f"mongodb://h/?tls=true&{name}={accepted}")


def _attributes_read_outside_the_parser() -> set[str]:
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if PACKAGE / "core" / "uri" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
    return names


def test_every_typed_setting_is_read_by_the_driver() -> None:
    fields = {field.name for field in dataclasses.fields(ClientOptions)} - {"options"}
    unread = fields - _attributes_read_outside_the_parser()
    assert unread == UNREAD_FIELDS
