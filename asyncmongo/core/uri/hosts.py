"""Host identifiers of a connection string: hostnames, IPv4, ``[IPv6]`` literals, sockets.

A Unix domain socket is a percent-encoded path ending in ``.sock`` (connection-string spec:
"UNIX domain sockets MUST end in '.sock' and MUST be URL encoded"); it becomes the address
``(path, None)``. Hostnames are lower-cased (DNS is case-insensitive and SDAM compares
addresses); socket paths keep their case.
"""

from __future__ import annotations

import ipaddress

from asyncmongo.core.address import DEFAULT_PORT, Address
from asyncmongo.core.uri.percent import percent_decode
from asyncmongo.errors import InvalidURI

__all__ = ["parse_host"]


def parse_host(raw: str) -> Address:
    """Parse one raw (still percent-encoded) host identifier."""
    if not raw:
        raise InvalidURI("empty host in the host list")
    text = percent_decode(raw, f"host {raw!r}")
    if "/" in text:
        if not text.endswith(".sock"):
            raise InvalidURI(f"host {text!r} contains '/' but is not a Unix socket path (*.sock)")
        return (text, None)
    if text.startswith("["):
        return _ip_literal(text)
    host, sep, port_text = text.partition(":")
    if not host:
        raise InvalidURI(f"empty host name in {text!r}")
    if sep and ":" in port_text:
        raise InvalidURI(f"host {text!r}: an IPv6 address must be enclosed in '[' and ']'")
    return (host.lower(), _port(port_text, text) if sep else DEFAULT_PORT)


def _ip_literal(text: str) -> Address:
    end = text.find("]")
    if end < 0:
        raise InvalidURI(f"host {text!r}: missing ']' after the IPv6 literal")
    literal, rest = text[1:end], text[end + 1 :]
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        raise InvalidURI(f"host {text!r}: {literal!r} is not an IPv6 address") from None
    if not rest:
        return (literal.lower(), DEFAULT_PORT)
    if not rest.startswith(":"):
        raise InvalidURI(f"host {text!r}: unexpected text after the IPv6 literal")
    return (literal.lower(), _port(rest[1:], text))


def _port(port_text: str, whole: str) -> int:
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        raise InvalidURI(f"host {whole!r}: the port must be an integer")
    port = int(port_text)
    if not 0 < port < 65536:
        raise InvalidURI(f"host {whole!r}: the port must be between 1 and 65535")
    return port
