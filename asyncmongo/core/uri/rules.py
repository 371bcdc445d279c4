"""Rules between options (each names the spec section it comes from).

``resolved`` is False for a ``mongodb+srv://`` URI before its DNS answers are applied: the
rules that need the final host list wait until then (seedlist spec: "the driver MUST first do
the SRV and TXT lookup and then perform the validation"); everything else fails at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

from asyncmongo.core.address import Address
from asyncmongo.errors import ConfigurationError

__all__ = ["check_combination"]

# uri-options: "Conflicting TLS options" (any two of these present, whatever their values).
_TLS_EXCLUSIVE = (
    "tlsInsecure",
    "tlsAllowInvalidCertificates",
    "tlsDisableOCSPEndpointCheck",
    "tlsDisableCertificateRevocationCheck",
)


def check_combination(
    options: Mapping[str, Any], *, hosts: tuple[Address, ...], is_srv: bool, resolved: bool
) -> None:
    """Raise ConfigurationError for the first rule the options break."""
    _tls(options)
    _direct_connection(options, hosts, is_srv)
    _srv(options, is_srv)
    _load_balanced(options, hosts, resolved)
    _proxy(options, hosts)
    _read_preference(options)
    _pool(options)


def _tls(options: Mapping[str, Any]) -> None:
    given = [name for name in (*_TLS_EXCLUSIVE, "tlsAllowInvalidHostnames") if name in options]
    for first, second in combinations(given, 2):
        if second == "tlsAllowInvalidHostnames" and first != "tlsInsecure":
            continue
        raise ConfigurationError(f"{first} and {second} cannot be given together")


def _direct_connection(options: Mapping[str, Any], hosts: tuple[Address, ...], srv: bool) -> None:
    # uri-options: "directConnection URI option with multiple seeds or SRV URI"
    if options.get("directConnection") is not True:
        return
    if srv:
        raise ConfigurationError("directConnection=true cannot be used with mongodb+srv://")
    if len(hosts) > 1:
        raise ConfigurationError("directConnection=true requires exactly one host")


def _srv(options: Mapping[str, Any], srv: bool) -> None:
    # seedlist spec: "URI Validation"
    for name in ("srvServiceName", "srvMaxHosts"):
        if name in options and not srv:
            raise ConfigurationError(f"{name} is only allowed with mongodb+srv://")
    if options.get("srvMaxHosts", 0) > 0 and "replicaSet" in options:
        raise ConfigurationError("srvMaxHosts cannot be combined with replicaSet")


def _load_balanced(options: Mapping[str, Any], hosts: tuple[Address, ...], resolved: bool) -> None:
    # load-balancers spec: "URI Validation"
    if options.get("loadBalanced") is not True:
        return
    if "replicaSet" in options:
        raise ConfigurationError("loadBalanced=true cannot be combined with replicaSet")
    if options.get("directConnection") is True:
        raise ConfigurationError("loadBalanced=true cannot be combined with directConnection=true")
    if options.get("srvMaxHosts", 0) > 0:
        raise ConfigurationError("loadBalanced=true cannot be combined with srvMaxHosts")
    if resolved and len(hosts) > 1:
        raise ConfigurationError("loadBalanced=true requires exactly one host")


def _proxy(options: Mapping[str, Any], hosts: tuple[Address, ...]) -> None:
    # SOCKS5 spec: "MongoClient Configuration"
    if "proxyHost" in options and any(port is None for _, port in hosts):
        raise ConfigurationError("proxyHost cannot be used with a Unix domain socket host")
    if "proxyHost" not in options:
        for name in ("proxyPort", "proxyUsername", "proxyPassword"):
            if name in options:
                raise ConfigurationError(f"{name} requires proxyHost")
    if ("proxyUsername" in options) != ("proxyPassword" in options):
        raise ConfigurationError("proxyUsername and proxyPassword must be given together")


def _read_preference(options: Mapping[str, Any]) -> None:
    # server-selection spec: mode primary takes no tag sets and no maxStalenessSeconds.
    if options.get("readPreference", "primary") != "primary":
        return
    if any(options.get("readPreferenceTags", ())):
        raise ConfigurationError("readPreferenceTags cannot be used with readPreference=primary")
    if options.get("maxStalenessSeconds", -1) != -1:
        raise ConfigurationError("maxStalenessSeconds cannot be used with readPreference=primary")


def _pool(options: Mapping[str, Any]) -> None:
    maximum = options.get("maxPoolSize", 100)
    if maximum and options.get("minPoolSize", 0) > maximum:
        raise ConfigurationError("minPoolSize cannot be larger than maxPoolSize")
