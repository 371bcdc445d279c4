"""ClientOptions: everything a connection string (plus keywords, plus TXT records) configures.

One frozen value the client, topology, pools and monitors read from. ``options`` keeps every
validated option that was explicitly given (URI, keywords, TXT record; plus the ``tls=True``
that mongodb+srv:// implies), under its canonical spec name (what the uri-options tests
compare), with lists as tuples and documents as read-only mappings; the typed attributes
carry the effective values with defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.adopt import adopt_driver_info, adopt_server_api
from asyncmongo.core.auth.credential import MongoCredential, build_credential
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.uri.rules import check_combination
from asyncmongo.core.uri.table import OPTIONS
from asyncmongo.core.wire.handshake import DriverInfo
from asyncmongo.errors import ConfigurationError

__all__ = ["ClientOptions", "ClientPoolOptions", "build_client_options"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True, repr=False)
class ClientOptions:
    """The parsed configuration of a client (defaults from the SDAM, CMAP, server-selection,
    retryable reads/writes and CSOT specs).

    ``hosts`` is empty for a ``mongodb+srv://`` URI until ``apply_srv_records`` fills it.
    ``connect_timeout_ms``/``socket_timeout_ms``/``max_idle_time_ms`` None mean "no limit"
    (the URI's 0); ``max_pool_size`` 0 means no maximum; ``timeout_ms`` None means CSOT is
    not enabled and 0 means "no timeout". ``tls_insecure`` also sets the three relaxations it
    implies (invalid certificates, invalid hostnames, no OCSP endpoint check). TLS is on for
    ``mongodb+srv://`` and whenever a ``tls*`` option is given, unless ``tls=false``.
    """

    hosts: tuple[Address, ...]
    is_srv: bool = False
    srv_host: str | None = None
    srv_service_name: str = "mongodb"
    srv_max_hosts: int = 0
    credential: MongoCredential | None = None
    database: str | None = None
    replica_set: str | None = None
    direct_connection: bool | None = None
    load_balanced: bool = False
    heartbeat_frequency_ms: int = 10_000
    local_threshold_ms: int = 15
    server_selection_timeout_ms: int = 30_000
    server_selection_try_once: bool = False
    connect_timeout_ms: int | None = 20_000
    socket_timeout_ms: int | None = None
    max_pool_size: int = 100
    min_pool_size: int = 0
    max_connecting: int = 2
    max_idle_time_ms: int | None = None
    wait_queue_timeout_ms: int | None = None
    timeout_ms: int | None = None
    read_preference: str = "primary"
    read_preference_tags: tuple[Mapping[str, str], ...] = ()
    max_staleness_seconds: int = -1
    read_concern: ReadConcern = field(default_factory=ReadConcern)
    write_concern: WriteConcern = field(default_factory=WriteConcern)
    retry_reads: bool = True
    retry_writes: bool = True
    compressors: tuple[str, ...] = ()
    zlib_compression_level: int = -1
    appname: str | None = None
    tls: bool = False
    tls_allow_invalid_certificates: bool = False
    tls_allow_invalid_hostnames: bool = False
    tls_ca_file: str | None = None
    tls_certificate_key_file: str | None = None
    tls_certificate_key_file_password: str | None = None
    tls_disable_certificate_revocation_check: bool = False
    tls_disable_ocsp_endpoint_check: bool = False
    tls_insecure: bool = False
    proxy_host: str | None = None
    proxy_port: int | None = None
    proxy_username: str | None = None
    proxy_password: str | None = None
    server_monitoring_mode: str = "auto"
    max_adaptive_retries: int = 2
    enable_overload_retargeting: bool = False
    server_api: Any = None
    #: DriverInfo records a wrapping library appends to the handshake metadata (keyword only).
    driver_info: tuple[DriverInfo, ...] = ()
    #: The BSON codec's uuidRepresentation (spec spelling; the client maps it to the enum).
    uuid_representation: str = "unspecified"
    options: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def pool_options(self) -> ClientPoolOptions:
        """The connection pool settings under PyMongo's names (``client.options.pool_options``)."""
        return ClientPoolOptions(
            max_pool_size=self.max_pool_size,
            min_pool_size=self.min_pool_size,
            max_connecting=self.max_connecting,
            max_idle_time_seconds=_seconds(self.max_idle_time_ms),
            wait_queue_timeout=_seconds(self.wait_queue_timeout_ms),
            connect_timeout=_seconds(self.connect_timeout_ms),
            socket_timeout=_seconds(self.socket_timeout_ms),
            appname=self.appname,
            load_balanced=self.load_balanced,
            tls_allow_invalid_hostnames=self.tls_allow_invalid_hostnames,
            server_api=self.server_api,
        )

    def __repr__(self) -> str:
        shown = {
            name: "<hidden>" if OPTIONS[name].secret else value
            for name, value in self.options.items()
        }
        hosts = ",".join(format_address(a) for a in self.hosts)
        where = f"srv={self.srv_host!r}, hosts=[{hosts}]" if self.is_srv else f"hosts=[{hosts}]"
        return (
            f"ClientOptions({where}, database={self.database!r}, "
            f"credential={self.credential!r}, options={shown!r})"
        )


@dataclass(frozen=True, slots=True)
class ClientPoolOptions:
    """PyMongo's ``PoolOptions`` attributes: durations in seconds, None for no limit;
    ``max_pool_size`` 0 means no maximum."""

    max_pool_size: int
    min_pool_size: int
    max_connecting: int
    max_idle_time_seconds: float | None
    wait_queue_timeout: float | None
    connect_timeout: float | None
    socket_timeout: float | None
    appname: str | None
    load_balanced: bool
    tls_allow_invalid_hostnames: bool
    server_api: Any
    #: CMAP: a pool is paused after a server error (always, as in PyMongo)
    pause_enabled: bool = True


def _seconds(ms: float | None) -> float | None:
    return ms / 1000 if ms else None


def build_client_options(
    *,
    hosts: tuple[Address, ...],
    options: Mapping[str, Any],
    is_srv: bool,
    srv_host: str | None,
    database: str | None,
    username: str | None,
    password: str | None,
    userinfo_given: bool,
    extras: Mapping[str, Any],
    resolved: bool,
) -> ClientOptions:
    """Check the combination (``resolved`` False skips the host-count rules of an unresolved
    SRV URI) and build the frozen options."""
    check_combination(options, hosts=hosts, is_srv=is_srv, resolved=resolved)
    o = dict(options)
    if is_srv and "tls" not in o:
        o["tls"] = True  # seedlist spec: mongodb+srv implicitly enables TLS
    credential = build_credential(
        mechanism=o.get("authMechanism"),
        username=username,
        password=password,
        source=o.get("authSource"),
        database=database,
        mechanism_properties=o.get("authMechanismProperties"),
        userinfo_given=userinfo_given,
    )
    insecure = o.get("tlsInsecure", False)
    return ClientOptions(
        hosts=hosts,
        is_srv=is_srv,
        srv_host=srv_host,
        srv_service_name=o.get("srvServiceName", "mongodb"),
        srv_max_hosts=o.get("srvMaxHosts", 0),
        credential=credential,
        database=database,
        replica_set=o.get("replicaSet"),
        direct_connection=o.get("directConnection"),
        load_balanced=o.get("loadBalanced", False),
        heartbeat_frequency_ms=o.get("heartbeatFrequencyMS", 10_000),
        local_threshold_ms=o.get("localThresholdMS", 15),
        server_selection_timeout_ms=o.get("serverSelectionTimeoutMS", 30_000),
        server_selection_try_once=o.get("serverSelectionTryOnce", False),
        connect_timeout_ms=o.get("connectTimeoutMS", 20_000) or None,
        socket_timeout_ms=o.get("socketTimeoutMS") or None,
        max_pool_size=o.get("maxPoolSize", 100),
        min_pool_size=o.get("minPoolSize", 0),
        max_connecting=o.get("maxConnecting", 2),
        max_idle_time_ms=o.get("maxIdleTimeMS") or None,
        wait_queue_timeout_ms=o.get("waitQueueTimeoutMS"),
        timeout_ms=o.get("timeoutMS"),
        read_preference=o.get("readPreference", "primary"),
        read_preference_tags=tuple(
            MappingProxyType(dict(tags)) for tags in o.get("readPreferenceTags", ())
        ),
        max_staleness_seconds=o.get("maxStalenessSeconds", -1),
        read_concern=ReadConcern(o.get("readConcernLevel")),
        write_concern=WriteConcern(o.get("w"), o.get("wTimeoutMS"), o.get("journal")),
        retry_reads=o.get("retryReads", True),
        retry_writes=o.get("retryWrites", True),
        compressors=tuple(o.get("compressors", ())),
        zlib_compression_level=o.get("zlibCompressionLevel", -1),
        appname=o.get("appname"),
        tls=o.get("tls", any(name.startswith("tls") for name in o)),
        tls_allow_invalid_certificates=o.get("tlsAllowInvalidCertificates", insecure),
        tls_allow_invalid_hostnames=o.get("tlsAllowInvalidHostnames", insecure),
        tls_ca_file=o.get("tlsCAFile"),
        tls_certificate_key_file=o.get("tlsCertificateKeyFile"),
        tls_certificate_key_file_password=o.get("tlsCertificateKeyFilePassword"),
        tls_disable_certificate_revocation_check=o.get(
            "tlsDisableCertificateRevocationCheck", False
        ),
        tls_disable_ocsp_endpoint_check=o.get("tlsDisableOCSPEndpointCheck", insecure),
        tls_insecure=insecure,
        proxy_host=o.get("proxyHost"),
        proxy_port=o.get("proxyPort", 1080 if "proxyHost" in o else None),
        proxy_username=o.get("proxyUsername"),
        proxy_password=o.get("proxyPassword"),
        server_monitoring_mode=o.get("serverMonitoringMode", "auto"),
        max_adaptive_retries=o.get("maxAdaptiveRetries", 2),
        enable_overload_retargeting=o.get("enableOverloadRetargeting", False),
        server_api=adopt_server_api(extras.get("server_api")),
        driver_info=_driver_info(extras.get("driver_info")),
        uuid_representation=o.get("uuidRepresentation", "unspecified"),
        options=MappingProxyType({name: _frozen(value) for name, value in o.items()}),
    )


def _driver_info(value: Any) -> tuple[DriverInfo, ...]:
    """``driver_info=`` takes one DriverInfo or a sequence of them (None: none)."""
    if value is None:
        return ()
    value = adopt_driver_info(value)  # PyMongo's is a namedtuple: one, not a sequence
    infos = tuple(
        adopt_driver_info(info)
        for info in (value if isinstance(value, (list, tuple)) else (value,))
    )
    for info in infos:
        if not isinstance(info, DriverInfo):
            raise ConfigurationError(f"driver_info must be a DriverInfo, not {type(info).__name__}")
    return infos


def _frozen(value: Any) -> Any:
    """Lists become tuples and dicts read-only mappings, so ``options`` is immutable too."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value
