"""Server addresses: ``(host, port)`` pairs, the key of every per-server structure.

Hosts are lower-cased (DNS names are case-insensitive and SDAM compares addresses); IPv6
literals are kept without their brackets; a Unix domain socket is ``(path, None)``.
"""

from __future__ import annotations

from asyncmongo.errors import ConfigurationError

DEFAULT_PORT = 27017

Address = tuple[str, int | None]


def parse_address(text: str, default_port: int = DEFAULT_PORT) -> Address:
    """Parse ``host``, ``host:port``, ``[v6]``, ``[v6]:port`` or a ``*.sock`` path."""
    if text.endswith(".sock"):
        return (text, None)
    host, port_text = text, ""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ConfigurationError(f"an IPv6 address must be enclosed in '[' and ']': {text!r}")
        host, rest = text[1:end], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ConfigurationError(f"unexpected text after an IPv6 literal: {text!r}")
        port_text = rest[1:]
        if rest and not port_text:
            raise ConfigurationError(f"empty port in {text!r}")
    elif ":" in text:
        host, _, port_text = text.partition(":")
        if ":" in port_text:
            raise ConfigurationError(f"an IPv6 literal must be enclosed in '[' and ']': {text!r}")
        if not port_text:
            raise ConfigurationError(f"empty port in {text!r}")
    if not host:
        raise ConfigurationError(f"empty host in {text!r}")
    return (host.lower(), _parse_port(port_text, text) if port_text else default_port)


def _parse_port(port_text: str, whole: str) -> int:
    if not port_text.isascii() or not port_text.isdigit():
        raise ConfigurationError(f"port must be an integer: {whole!r}")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ConfigurationError(f"port must be between 1 and 65535: {whole!r}")
    return port


def format_address(address: Address) -> str:
    """The ``host:port`` form the specs and their tests use (IPv6 in brackets)."""
    host, port = address
    if port is None:
        return host
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"
