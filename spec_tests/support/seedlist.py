"""What the initial-dns-seedlist-discovery runner needs beyond DNS: the deployments its README
describes, simulated by ``asyncmongo.testing`` on the ports the SRV records name, and name
resolution of the records' hosts through the test's DNS server.

The README's setup, and how it is met here:

- ``replica-set/``: a three-member set ``repl0`` on localhost ports 27017-27019, its members
  naming themselves ``localhost:<port>`` (what the files' ``hosts`` list).
- ``sharded/``: mongos routers on ports 27017 and 27018.
- ``load-balanced/``: the load balancer on port 8000 (the records of test23/test24 point there).
- TLS everywhere ("the clusters MUST be started with SSL enabled"), with a server certificate
  for localhost and every SRV target of the records; a file whose URI turns TLS off
  (``ssl=false``) gets the same deployment without TLS, as a mongod with
  ``tlsMode=allowTLS`` would serve it.
- The SRV targets (``localhost.test.build.10gen.cc``, ...) are resolved by the same dnsmasq
  that serves the SRV/TXT records (its A records, as the README configures them), through
  :func:`resolve_test_domains`: the running asyncio loop's ``getaddrinfo`` asks that server for
  names in its domains and the system for everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import dns.asyncresolver
import dns.exception
import dns.rdatatype

from asyncmongo.errors import ConfigurationError
from asyncmongo.runtime.srv import dns_nameservers_for_tests
from asyncmongo.testing import LoadBalanced, ReplicaSet, ShardedCluster
from tests.support.dns_server import DnsServer

__all__ = [
    "DEPLOYMENT_PORTS",
    "SRV_TARGETS",
    "busy_ports",
    "deployment_for",
    "resolve_test_domains",
    "routing_unavailable_reason",
]

#: The ports each directory's deployment listens on (README "Test Setup"; test23/test24's
#: SRV records point to port 8000, where the load balancer answers).
DEPLOYMENT_PORTS: dict[str, tuple[int, ...]] = {
    "replica-set": (27017, 27018, 27019),
    "sharded": (27017, 27018),
    "load-balanced": (8000,),
}

#: The names the SRV records point at that resolve to 127.0.0.1 (the README's A records):
#: the server certificate must be valid for them.
SRV_TARGETS = ("localhost.test.build.10gen.cc", "localhost.sub.test.build.10gen.cc")

_REPLICA_SET_NAME = "repl0"


def busy_ports(ports: tuple[int, ...]) -> list[int]:
    """The ports of ``ports`` that cannot be bound on 127.0.0.1 now (something listens)."""
    busy = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy


def deployment_for(
    kind: str, tls: ssl.SSLContext | None
) -> ReplicaSet | ShardedCluster | LoadBalanced:
    """The simulated deployment the README asks for under directory ``kind``."""
    ports = DEPLOYMENT_PORTS[kind]
    if kind == "replica-set":
        return ReplicaSet(
            len(ports), set_name=_REPLICA_SET_NAME, ports=ports, host_name="localhost", tls=tls
        )
    if kind == "sharded":
        return ShardedCluster(len(ports), ports=ports, host_name=SRV_TARGETS[0], tls=tls)
    if kind == "load-balanced":
        return LoadBalanced(port=ports[0], host_name=SRV_TARGETS[0], tls=tls)
    raise ConfigurationError(f"no deployment for test directory {kind!r}")


@contextlib.contextmanager
def resolve_test_domains(server: DnsServer) -> Iterator[None]:
    """Inside the block, the client's SRV/TXT lookups (``dns_nameservers_for_tests``) and the
    running loop's host name lookups for names under ``server.domains`` go to ``server``.

    Raises ``RuntimeError`` (before changing anything) on a loop that does not resolve
    through ``loop.getaddrinfo`` (uvloop resolves inside libuv)."""
    loop = asyncio.get_running_loop()
    original = loop.getaddrinfo
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = [server.host]
    resolver.port = server.port
    resolver.lifetime = 2.0
    domains = tuple(domain.lower().strip(".") for domain in server.domains)

    async def getaddrinfo(
        host: Any, port: Any, *, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        name = host.decode() if isinstance(host, bytes) else host
        if not isinstance(name, str) or not _in_domains(name, domains):
            return await original(host, port, family=family, type=type, proto=proto, flags=flags)
        if family not in (0, socket.AF_INET):
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: the test DNS serves IPv4 only")
        try:
            answer = await resolver.resolve(name, dns.rdatatype.A)
        except dns.exception.DNSException as exc:
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: {exc}") from exc
        sock_type = type or socket.SOCK_STREAM
        sock_proto = proto or socket.IPPROTO_TCP
        numeric_port = int(port) if port is not None else 0
        return [
            (socket.AF_INET, sock_type, sock_proto, "", (rdata.address, numeric_port))
            for rdata in answer
        ]

    reason = routing_unavailable_reason()
    if reason is not None:
        raise RuntimeError(reason)
    loop.getaddrinfo = getaddrinfo  # type: ignore[method-assign]
    try:
        with dns_nameservers_for_tests([server.host], server.port):
            yield
    finally:
        del loop.getaddrinfo  # back to the class's method


def routing_unavailable_reason() -> str | None:
    """Why :func:`resolve_test_domains` cannot work on the running loop, or None."""
    loop = asyncio.get_running_loop()
    if isinstance(loop, asyncio.BaseEventLoop):
        return None
    # uvloop's create_connection resolves through libuv, never through loop.getaddrinfo.
    return (
        f"cannot route host name lookups of {type(loop).__module__}.{type(loop).__name__} "
        "to the test DNS server: only asyncio's own loops resolve through loop.getaddrinfo "
        "(uvloop resolves inside libuv)"
    )


def _in_domains(name: str, domains: tuple[str, ...]) -> bool:
    name = name.lower().rstrip(".")
    return any(name == domain or name.endswith(f".{domain}") for domain in domains)
