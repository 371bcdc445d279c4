"""mongodb+srv:// without I/O: the DNS answers come in as data (specs/initial-dns-seedlist-
discovery and specs/polling-srv-records-for-mongos-discovery).

The runtime (``asyncmongo.runtime.srv``) resolves ``srv_query_name(...)`` and the TXT record
of ``srv_host`` and hands the answers to ``apply_srv_records`` (initial seedlist) or
``polled_hosts`` (rescans). Randomness (srvMaxHosts) comes from an injected ``rng``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from asyncmongo.core.address import Address
from asyncmongo.core.uri.client_options import ClientOptions, build_client_options
from asyncmongo.core.uri.collect import collect_pairs
from asyncmongo.core.uri.split import split_options
from asyncmongo.core.uri.table import canonical_name
from asyncmongo.errors import ConfigurationError

__all__ = [
    "TXT_OPTIONS",
    "Shuffler",
    "SrvRecord",
    "apply_srv_records",
    "choose_hosts",
    "is_valid_target",
    "parse_txt_records",
    "polled_hosts",
    "srv_query_name",
]

#: seedlist spec: "A Client MUST only support the authSource, replicaSet, and loadBalanced
#: options through a TXT record".
TXT_OPTIONS = frozenset({"authSource", "replicaSet", "loadBalanced"})


class Shuffler(Protocol):
    """What srvMaxHosts needs from a random generator (``random.Random`` fits)."""

    def shuffle(self, x: list[Address], /) -> None: ...


@dataclass(frozen=True, slots=True)
class SrvRecord:
    """One SRV answer; priority and weight are ignored by the spec, so they are not kept."""

    target: str
    port: int


def srv_query_name(srv_host: str, service_name: str = "mongodb") -> str:
    return f"_{service_name}._tcp.{srv_host}"


def _domain(srv_host: str) -> str:
    # seedlist spec: with three or more parts the left-most one is the {subdomain}; with one
    # or two parts the whole hostname is the {domainname}.
    parts = srv_host.split(".")
    return ".".join(parts[1:]) if len(parts) >= 3 else srv_host


def is_valid_target(srv_host: str, target: str) -> bool:
    """Does an SRV target share the SRV host's {domainname}, with at least one more level?"""
    host = target.lower().rstrip(".")
    return host.endswith("." + _domain(srv_host.lower().rstrip(".")))


def _address(record: SrvRecord) -> Address:
    return (record.target.lower().rstrip("."), record.port)


def choose_hosts(
    addresses: Sequence[Address], srv_max_hosts: int, rng: Shuffler
) -> tuple[Address, ...]:
    """All hosts, or ``srv_max_hosts`` of them picked by a Fisher-Yates shuffle."""
    if srv_max_hosts == 0 or srv_max_hosts >= len(addresses):
        return tuple(addresses)
    shuffled = list(addresses)
    rng.shuffle(shuffled)
    return tuple(shuffled[:srv_max_hosts])


def parse_txt_records(records: Sequence[Sequence[str | bytes]]) -> dict[str, object]:
    """Options from the TXT answer: at most one record, its strings concatenated, only
    authSource/replicaSet/loadBalanced, strictly validated."""
    if len(records) > 1:
        raise ConfigurationError(f"only one TXT record is allowed, found {len(records)}")
    if not records:
        return {}
    text = "".join(
        part.decode("utf-8", "replace") if isinstance(part, bytes) else part for part in records[0]
    )
    pairs = split_options(text, "TXT record")
    for key, _ in pairs:
        if canonical_name(key) not in TXT_OPTIONS:
            raise ConfigurationError(
                f"option {key!r} is not allowed in a TXT record (only {sorted(TXT_OPTIONS)})"
            )
    return collect_pairs(pairs, lenient=False, where="TXT record")


def apply_srv_records(
    options: ClientOptions,
    srv_records: Iterable[SrvRecord],
    txt_records: Sequence[Sequence[str | bytes]],
    rng: Shuffler,
) -> ClientOptions:
    """The options of a mongodb+srv:// URI once its DNS answers are known.

    Options from the URI and keywords override the TXT record's; the combination rules run
    again now that the hosts are known.
    """
    if not options.is_srv or options.srv_host is None:
        raise ConfigurationError("apply_srv_records needs the options of a mongodb+srv:// URI")
    name = srv_query_name(options.srv_host, options.srv_service_name)
    records = list(srv_records)
    if not records:
        raise ConfigurationError(f"DNS returned no SRV records for {name!r}")
    for record in records:
        if not is_valid_target(options.srv_host, record.target):
            raise ConfigurationError(
                f"SRV record {record.target!r} of {name!r} is not in the domain "
                f"{_domain(options.srv_host)!r}"
            )
    addresses = list(dict.fromkeys(_address(record) for record in records))
    merged = {**parse_txt_records(txt_records), **options.options}
    credential = options.credential
    return build_client_options(
        hosts=choose_hosts(addresses, options.srv_max_hosts, rng),
        options=merged,
        is_srv=True,
        srv_host=options.srv_host,
        database=options.database,
        username=credential.username if credential else None,
        password=credential.password if credential else None,
        userinfo_given=credential is not None,
        extras={"server_api": options.server_api},
        resolved=True,
    )


def polled_hosts(
    current: Sequence[Address],
    srv_records: Iterable[SrvRecord],
    srv_host: str,
    srv_max_hosts: int,
    rng: Shuffler,
) -> tuple[Address, ...] | None:
    """The host list after a rescan (polling spec), or None to keep the topology unchanged.

    Invalid targets are dropped; hosts still present stay in place; with srvMaxHosts, new
    hosts are picked at random until there are srvMaxHosts hosts.
    """
    valid = list(
        dict.fromkeys(_address(r) for r in srv_records if is_valid_target(srv_host, r.target))
    )
    if not valid:
        return None
    kept = [host for host in current if host in valid]
    new = [host for host in valid if host not in kept]
    if srv_max_hosts == 0 or srv_max_hosts >= len(valid):
        return (*kept, *new)
    rng.shuffle(new)
    return (*kept, *new[: max(srv_max_hosts - len(kept), 0)])
