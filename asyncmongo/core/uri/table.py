"""The URI options table: canonical spec name, value type, aliases, deprecated names.

Keys are matched case-insensitively (only ASCII A-Z are folded, per the connection-string
spec); keyword arguments may also use snake_case (``connect_timeout_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass

from asyncmongo.core.uri import values as v

__all__ = [
    "DEPRECATED",
    "OPTIONS",
    "Option",
    "canonical_name",
    "fold_key",
    "kwarg_key",
]


@dataclass(frozen=True, slots=True)
class Option:
    """One option of the table; ``secret`` values never appear in messages or reprs."""

    name: str
    validate: v.Validator
    is_list: bool = False
    secret: bool = False


_NON_NEGATIVE = v.integer(0)
_POSITIVE = v.integer(1)

_TABLE = (
    Option("appname", v.appname),
    Option("authMechanism", v.string),
    Option("authMechanismProperties", v.key_value_pairs),
    Option("authSource", v.string),
    Option("compressors", v.compressors),
    Option("connectTimeoutMS", _NON_NEGATIVE),
    Option("directConnection", v.boolean),
    Option("enableOverloadRetargeting", v.boolean),
    Option("heartbeatFrequencyMS", v.integer(500)),
    Option("journal", v.boolean),
    Option("loadBalanced", v.boolean),
    Option("localThresholdMS", _NON_NEGATIVE),
    Option("maxAdaptiveRetries", _NON_NEGATIVE),
    Option("maxConnecting", _POSITIVE),
    Option("maxIdleTimeMS", _NON_NEGATIVE),
    Option("maxPoolSize", _NON_NEGATIVE),
    Option("maxStalenessSeconds", v.max_staleness),
    Option("minPoolSize", _NON_NEGATIVE),
    Option("proxyHost", v.string),
    Option("proxyPassword", v.string, secret=True),
    Option("proxyPort", v.integer(0, 65535)),
    Option("proxyUsername", v.string),
    Option("readConcernLevel", v.string),
    Option("readPreference", v.choice(v.READ_PREFERENCE_MODES)),
    Option("readPreferenceTags", v.tag_set, is_list=True),
    Option("replicaSet", v.string),
    Option("retryReads", v.boolean),
    Option("retryWrites", v.boolean),
    Option("serverMonitoringMode", v.choice(("auto", "stream", "poll"))),
    Option("serverSelectionTimeoutMS", _NON_NEGATIVE),
    Option("serverSelectionTryOnce", v.boolean),
    Option("socketTimeoutMS", _NON_NEGATIVE),
    Option("srvMaxHosts", _NON_NEGATIVE),
    Option("srvServiceName", v.service_name),
    Option("timeoutMS", v.integer(0, v.INT64_MAX)),
    Option("tls", v.boolean),
    Option("tlsAllowInvalidCertificates", v.boolean),
    Option("tlsAllowInvalidHostnames", v.boolean),
    Option("tlsCAFile", v.string),
    Option("tlsCertificateKeyFile", v.string),
    Option("tlsCertificateKeyFilePassword", v.string, secret=True),
    Option("tlsDisableCertificateRevocationCheck", v.boolean),
    Option("tlsDisableOCSPEndpointCheck", v.boolean),
    Option("tlsInsecure", v.boolean),
    Option("uuidRepresentation", v.choice(v.UUID_REPRESENTATIONS)),
    Option("w", v.w_value),
    Option("waitQueueTimeoutMS", _POSITIVE),
    Option("wTimeoutMS", v.integer(0, v.INT64_MAX)),
    Option("zlibCompressionLevel", v.integer(-1, 9)),
)

#: canonical spec name -> Option
OPTIONS: dict[str, Option] = {option.name: option for option in _TABLE}

#: Other spellings of the same option that are not deprecated (uri-options: "ssl" is "tls").
_ALIASES = {"ssl": "tls"}

#: Deprecated (renamed) keys -> their replacement (connection-string: "Deprecated Key Value
#: Pairs"). gssapiServiceName is authMechanismProperties=SERVICE_NAME:<value> (specs/auth).
DEPRECATED = {
    "wtimeout": "wTimeoutMS",
    "j": "journal",
    "gssapiservicename": "authMechanismProperties",
}

_BY_FOLDED: dict[str, str] = {name.lower(): name for name in OPTIONS}
_BY_FOLDED.update(_ALIASES)

_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold_key(key: str) -> str:
    """Lower-case ASCII A-Z only ("other characters are left as-is")."""
    return key.translate(_ASCII_UPPER)


def canonical_name(key: str) -> str | None:
    """The canonical name of a URI key (aliases resolved), or None if unknown/deprecated."""
    return _BY_FOLDED.get(fold_key(key))


def kwarg_key(key: str) -> str:
    """Fold a keyword argument name: case-insensitive, underscores ignored (snake_case)."""
    return fold_key(key).replace("_", "")
