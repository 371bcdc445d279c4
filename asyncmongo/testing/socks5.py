"""A small SOCKS5 proxy (RFC 1928 CONNECT, RFC 1929 username/password) for tests.

It carries connections to simulated deployments and counts them, so a test proves that
traffic went through it (and what it was asked to connect to)::

    async with Socks5Proxy(username="user", password="p4ssw0rd") as proxy, Standalone() as db:
        client = AsyncMongoClient(db.uri, proxyHost="127.0.0.1", proxyPort=proxy.port,
                                  proxyUsername="user", proxyPassword="p4ssw0rd")
        ...
        assert proxy.connections > 0
        assert proxy.requests[0].atyp == "domain"   # the host name went unresolved

Like the specs' ``socks5srv.py``, it picks "no authentication" whenever the client offers it
and the proxy needs none, so a client offering credentials still passes an open proxy; and
``map={"localhost:12345": "127.0.0.1:27017"}`` sends a requested destination elsewhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from asyncmongo.testing.tcp_service import TcpService, splice

__all__ = ["Destination", "Socks5Proxy"]

_ATYP_NAMES = {1: "ipv4", 3: "domain", 4: "ipv6"}


@dataclass(frozen=True, slots=True)
class Destination:
    """What one CONNECT asked for: the address type (``ipv4``, ``domain``, ``ipv6``), host
    and port, as the client sent them."""

    atyp: str
    host: str
    port: int


class Socks5Proxy(TcpService):
    """An asyncio SOCKS5 proxy on ``host`` (port 0: any free one)."""

    def __init__(
        self,
        *,
        username: str | None = None,
        password: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        map: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(host=host, port=port)
        self.username = username
        self.password = password
        self._map = dict(map or {})
        #: Tunnels carried (CONNECTs that succeeded).
        self.connections = 0
        #: Every CONNECT request, in order.
        self.requests: list[Destination] = []
        #: Handshakes refused for bad credentials or no acceptable method.
        self.refused = 0

    def __repr__(self) -> str:
        auth = "username/password" if self.username is not None else "no auth"
        return (
            f"<Socks5Proxy {self.host}:{self.port} {auth}: {self.connections} carried, "
            f"{len(self._handlers)} open, {self.refused} refused>"
        )

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            destination = await self._handshake(reader, writer)
            if destination is None:
                return
            tunnel = await self._connect(destination, writer)
            if tunnel is None:
                return
            up_reader, upstream = tunnel
            self.connections += 1
            await splice(reader, writer, up_reader, upstream)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for stream in (writer, upstream):
                if stream is not None:
                    stream.close()

    async def _handshake(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Destination | None:
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5:
            return None
        if self.username is None and 0 in methods:
            writer.write(b"\x05\x00")
        elif self.username is not None and 2 in methods:
            writer.write(b"\x05\x02")
            if not await self._authenticate(reader, writer):
                self.refused += 1
                return None
        else:
            writer.write(b"\x05\xff")
            self.refused += 1
            return None
        _, command, _, atyp = await reader.readexactly(4)
        destination = await _read_destination(reader, atyp)
        self.requests.append(destination)
        if command != 1:
            writer.write(_reply(7))
            return None
        return destination

    async def _authenticate(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        _, size = await reader.readexactly(2)
        username = (await reader.readexactly(size)).decode()
        (size,) = await reader.readexactly(1)
        password = (await reader.readexactly(size)).decode()
        good = username == self.username and password == self.password
        writer.write(b"\x01\x00" if good else b"\x01\x01")
        await writer.drain()
        return good

    async def _connect(
        self, destination: Destination, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        key = f"{destination.host}:{destination.port}"
        host, _, port = self._map.get(key, key).rpartition(":")
        try:
            up_reader, upstream = await asyncio.open_connection(host.strip("[]"), int(port))
        except OSError:
            writer.write(_reply(5))  # connection refused
            return None
        writer.write(_reply(0))
        await writer.drain()
        return up_reader, upstream


async def _read_destination(reader: asyncio.StreamReader, atyp: int) -> Destination:
    if atyp == 1:
        host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
    elif atyp == 4:
        host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
    else:
        (size,) = await reader.readexactly(1)
        host = (await reader.readexactly(size)).decode("idna")
    port = int.from_bytes(await reader.readexactly(2), "big")
    return Destination(_ATYP_NAMES.get(atyp, str(atyp)), host, port)


def _reply(code: int) -> bytes:
    """A CONNECT reply with REP ``code`` and bound address 0.0.0.0:0."""
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])
