"""The syntax of a connection string, before any option is interpreted.

Follows the connection-string spec's reference algorithm: scheme, split at the first ``/``
(or ``?``), userinfo at the last ``@``, hosts at ``,``, the auth database up to ``?``, then
``key=value`` pairs at ``&``. Every part is percent-decoded strictly here, so later stages
only see text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncmongo.core.address import Address
from asyncmongo.core.uri.hosts import parse_host
from asyncmongo.core.uri.percent import percent_decode
from asyncmongo.errors import InvalidURI

__all__ = ["SCHEME", "SRV_SCHEME", "SplitUri", "split_options", "split_uri"]

SCHEME = "mongodb://"
SRV_SCHEME = "mongodb+srv://"
_FORBIDDEN_IN_DATABASE = frozenset('/\\ "$')


@dataclass(frozen=True, slots=True)
class SplitUri:
    """The parts of a connection string; ``userinfo_given`` is True when there was an ``@``."""

    is_srv: bool
    hosts: tuple[Address, ...]
    srv_host: str | None
    userinfo_given: bool
    username: str | None
    password: str | None = field(repr=False)
    database: str | None
    options: tuple[tuple[str, str], ...]


def split_uri(uri: str) -> SplitUri:
    """Split ``uri`` into its parts; InvalidURI names the part that is malformed."""
    if not isinstance(uri, str):
        raise InvalidURI(f"a connection string must be a str, not {type(uri).__name__}")
    if uri.startswith(SRV_SCHEME):
        is_srv, rest = True, uri[len(SRV_SCHEME) :]
    elif uri.startswith(SCHEME):
        is_srv, rest = False, uri[len(SCHEME) :]
    else:
        raise InvalidURI("a connection string must start with 'mongodb://' or 'mongodb+srv://'")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    userinfo, at, host_text = authority.rpartition("@")
    if not host_text:
        raise InvalidURI("no host in the connection string (a socket path must be %-encoded)")
    username, password = _userinfo(userinfo) if at else (None, None)
    database, query = _path(path)
    if is_srv:
        srv_host = _srv_host(host_text)
        hosts: tuple[Address, ...] = ()
    else:
        srv_host = None
        hosts = tuple(parse_host(raw) for raw in host_text.split(","))
    return SplitUri(
        is_srv=is_srv,
        hosts=hosts,
        srv_host=srv_host,
        userinfo_given=bool(at),
        username=username,
        password=password,
        database=database,
        options=split_options(query, "connection string"),
    )


def _userinfo(raw: str) -> tuple[str, str | None]:
    # Never echo the userinfo: it may hold the password.
    if "@" in raw or raw.count(":") > 1:
        raise InvalidURI(
            "the username and password must be percent-encoded "
            "(an unescaped '@' or more than one ':' was found in the userinfo)"
        )
    user, colon, secret = raw.partition(":")
    username = percent_decode(user, "the username")
    password = percent_decode(secret, "the password") if colon else None
    return username, password


def _path(path: str) -> tuple[str | None, str]:
    if not path:
        return None, ""
    if path.startswith("?"):
        return None, path[1:]
    raw_db, _, query = path[1:].partition("?")
    if not raw_db:
        return None, query
    if "@" in raw_db:
        # Most likely a '/' in the password: never echo this part, it may hold the password.
        raise InvalidURI(
            "an '@' follows the first '/': a '/' in the username or password must be "
            "percent-encoded as %2F (and an '@' in the database name as %40)"
        )
    database = percent_decode(raw_db, "the database name")
    bad = sorted(_FORBIDDEN_IN_DATABASE.intersection(database))
    if bad:
        raise InvalidURI(f"database name {database!r} must not contain {bad}")
    return database, query


def _srv_host(host_text: str) -> str:
    if "," in host_text:
        raise InvalidURI("a mongodb+srv:// connection string must name exactly one host")
    host = percent_decode(host_text, f"host {host_text!r}")
    if not host:
        raise InvalidURI("empty host in a mongodb+srv:// connection string")
    if ":" in host:
        raise InvalidURI(f"a mongodb+srv:// host must not have a port: {host!r}")
    if "/" in host or host.startswith("["):
        raise InvalidURI(f"a mongodb+srv:// host must be a DNS name: {host!r}")
    if any(not label for label in host.rstrip(".").split(".")):
        raise InvalidURI(f"a mongodb+srv:// host must be a DNS name: {host!r}")
    return host.lower().rstrip(".")


def split_options(query: str, where: str) -> tuple[tuple[str, str], ...]:
    """Split ``k=v&k2=v2`` into decoded pairs in order (keys keep their case here)."""
    pairs: list[tuple[str, str]] = []
    for item in query.split("&"):
        if not item:
            continue
        raw_key, eq, raw_value = item.partition("=")
        if not eq:
            raise InvalidURI(f"option {raw_key!r} in the {where} has no '=value'")
        key = percent_decode(raw_key, f"an option name in the {where}")
        if not key:
            raise InvalidURI(f"an option in the {where} has an empty name")
        pairs.append((key, percent_decode(raw_value, f"the value of option {key!r}")))
    return tuple(pairs)
