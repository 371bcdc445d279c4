"""The only socket and ssl code of asyncmongo: open a transport, build TLS contexts, and turn
every outside failure into the driver's errors in one place (:func:`translate_error`).

TCP (IPv4/IPv6, ``TCP_NODELAY``) and Unix domain sockets (an address whose port is None).
TLS uses the standard ``ssl`` module with the URI options' semantics:
``tlsAllowInvalidCertificates`` turns off chain verification (and with it hostname checks),
``tlsAllowInvalidHostnames`` only the hostname check, ``tlsInsecure`` both.

With a SOCKS5 proxy (``proxyHost``; SOCKS5 spec, "Connection Establishment") every TCP
connection is opened to the proxy, the sans-I/O :class:`~asyncmongo.core.socks5.Socks5Handshake`
runs over it to connect to the server's host (unresolved, the proxy resolves it), and the
connection continues as one to the server: TLS over the tunnel, the certificate checked
against the server's host name. A proxy that is down or refuses is a network error naming the
proxy; there is never a direct connection instead.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.socks5 import Socks5Error, Socks5Handshake
from asyncmongo.errors import AutoReconnect, ConfigurationError, ConnectionFailure, NetworkTimeout

P = TypeVar("P", bound=asyncio.BaseProtocol)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """The ``tls*`` options of the connection string / client."""

    enabled: bool = False
    ca_file: str | None = None
    certificate_key_file: str | None = None
    certificate_key_file_password: str | None = field(default=None, repr=False)
    allow_invalid_certificates: bool = False
    allow_invalid_hostnames: bool = False
    insecure: bool = False

    @property
    def verify_certificates(self) -> bool:
        return not (self.insecure or self.allow_invalid_certificates)

    @property
    def check_hostname(self) -> bool:
        return self.verify_certificates and not self.allow_invalid_hostnames


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """The SOCKS5 proxy every connection goes through (``proxyHost`` and friends).

    ``username``/``password`` are both set or both None (username/password authentication).
    """

    host: str
    port: int = 1080
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def credentials(self) -> tuple[str, str] | None:
        if self.username is None or self.password is None:
            return None
        return (self.username, self.password)

    def describe(self) -> str:
        return f"SOCKS5 proxy {format_address((self.host, self.port))}"


@functools.lru_cache(maxsize=16)
def create_ssl_context(tls: TlsSettings) -> ssl.SSLContext:
    """A client context for ``tls`` (cached: loading CA files is slow, settings are frozen)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    try:
        if tls.ca_file is not None:
            context.load_verify_locations(cafile=tls.ca_file)
        if tls.certificate_key_file is not None:
            context.load_cert_chain(
                tls.certificate_key_file, password=tls.certificate_key_file_password
            )
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"cannot load TLS certificates: {exc}") from exc
    context.check_hostname = tls.check_hostname
    if not tls.verify_certificates:
        context.verify_mode = ssl.CERT_NONE
    return context


async def open_transport(
    address: Address,
    protocol_factory: Callable[[], P],
    *,
    tls: TlsSettings,
    deadline: float | None,
    proxy: ProxySettings | None = None,
) -> tuple[asyncio.Transport, P]:
    """Connect to ``address`` (TCP or Unix socket, TLS if asked, through ``proxy`` if given)
    before ``deadline``."""
    context = create_ssl_context(tls) if tls.enabled else None
    loop = asyncio.get_running_loop()
    host, port = address
    try:
        if proxy is not None:
            transport, protocol = await _connect_through(
                proxy, address, protocol_factory, context, deadline
            )
        else:
            async with asyncio.timeout_at(deadline):
                if port is None:
                    transport, protocol = await loop.create_unix_connection(
                        protocol_factory,
                        host,
                        ssl=context,
                        server_hostname=host if context else None,
                    )
                else:
                    transport, protocol = await loop.create_connection(
                        protocol_factory, host, port, ssl=context
                    )
    except (OSError, TimeoutError, EOFError) as exc:
        raise translate_error(exc, address, "connect") from exc
    _tune_socket(transport)
    limit_read_size(transport)
    return transport, protocol


async def _connect_through(
    proxy: ProxySettings,
    address: Address,
    protocol_factory: Callable[[], P],
    context: ssl.SSLContext | None,
    deadline: float | None,
) -> tuple[asyncio.Transport, P]:
    """Open the tunnel to ``address``, then the connection (TLS if ``context``) over it."""
    host, port = address
    if port is None:
        raise ConfigurationError(f"{host}: a Unix domain socket cannot be reached through a proxy")
    try:
        async with asyncio.timeout_at(deadline):
            sock = await _open_tunnel(proxy, host, port)
    except TimeoutError as exc:
        raise ProxyError(f"{proxy.describe()}: timed out") from exc
    try:
        async with asyncio.timeout_at(deadline):
            return await asyncio.get_running_loop().create_connection(
                protocol_factory, sock=sock, ssl=context, server_hostname=host if context else None
            )
    except BaseException:
        sock.close()
        raise


async def _open_tunnel(proxy: ProxySettings, host: str, port: int) -> socket.socket:
    """A socket to the proxy on which the SOCKS5 CONNECT to ``host:port`` succeeded.

    Any failure reaching or talking to the proxy is raised as :class:`ProxyError`.
    """
    try:
        sock = await _connect_socket(proxy.host, proxy.port)
    except OSError as exc:
        message = f"{proxy.describe()}: cannot connect to the proxy: {_reason(exc)}"
        raise ProxyError(message) from exc
    try:
        await _socks5_handshake(sock, Socks5Handshake(host, port, proxy.credentials))
    except OSError as exc:
        sock.close()
        raise ProxyError(f"{proxy.describe()}: {exc.strerror or exc} in the handshake") from exc
    except Socks5Error as exc:
        sock.close()
        raise ProxyError(f"{proxy.describe()}: {exc}") from exc
    except BaseException:
        sock.close()
        raise
    return sock


def _reason(exc: OSError) -> str:
    """The system's words for ``exc`` (asyncio's "Connect call failed" hides them)."""
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name ({exc.strerror})"
    if exc.errno and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc)


async def _connect_socket(host: str, port: int) -> socket.socket:
    """A connected non-blocking TCP socket to ``host:port`` (each resolved address in turn)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    error: OSError = OSError(f"cannot resolve {host!r}")
    for family, kind, proto, _, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise error


async def _socks5_handshake(sock: socket.socket, handshake: Socks5Handshake) -> None:
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, handshake.start())
    while not handshake.done:
        reply = handshake.receive_data(await loop.sock_recv(sock, 512))
        if reply:
            await loop.sock_sendall(sock, reply)
    if handshake.leftover:  # the server speaks only when spoken to
        raise Socks5Error("unexpected bytes after the proxy's CONNECT reply")


class ProxyError(ConnectionError):
    """The SOCKS5 proxy could not be reached, or refused the handshake, the authentication
    or the connection. Translated like any network error, but never a sign of an
    overloaded server (SOCKS5 spec: no backpressure labels)."""


def _tune_socket(transport: asyncio.BaseTransport) -> None:
    """TCP_NODELAY (commands are small and latency-bound) and keepalive."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    except OSError:
        pass  # best effort: a socket that refuses options still works


#: The most bytes one read takes from the socket, on asyncio's own (selector) loop.
#: asyncio reads with ``recv(256 KiB)``: a fresh 256 KiB bytes object per reply, which glibc
#: serves with mmap() (it is over the 128 KiB mmap threshold) and, once shrunk to the
#: reply's size, frees with munmap(). Unless the allocator has happened to raise its
#: threshold, that is two system calls and page faults per reply, which measured a third of
#: a find_one's client CPU. Below the threshold the buffer comes from the heap; a large reply
#: only takes more reads. uvloop reads into its own buffer and is left alone.
READ_SIZE: Final = 64 * 1024


def limit_read_size(transport: asyncio.BaseTransport) -> None:
    """Read at most READ_SIZE bytes at a time wherever asyncio's ``max_size`` is: on its
    plain socket transports and, with TLS, on the SSL protocol that reads the decrypted
    bytes (the same 256 KiB, twice per reply). uvloop's have none."""
    for reader in (transport, getattr(transport, "_ssl_protocol", None)):
        if isinstance(getattr(type(reader), "max_size", None), int):
            reader.max_size = READ_SIZE  # type: ignore[union-attr]


#: TLS failures that are I/O (the peer hung up mid-handshake): possibly an overloaded server.
_TLS_IO_ERRORS = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)


def is_backpressure_candidate(cause: BaseException | None) -> bool:
    """Whether a failure to open a connection (``cause``: the outside exception behind the
    driver's error, None if there was none) may come from an overloaded server, so it earns
    the CMAP "backpressure-enabled" labels.

    Refused/reset connections, timeouts and EOF during the TLS handshake may; DNS lookup
    failures and non-I/O TLS errors (certificate validation, hostname mismatch, protocol
    refusals) cannot.
    """
    if isinstance(cause, socket.gaierror | ProxyError):
        return False
    return not (isinstance(cause, ssl.SSLError) and not isinstance(cause, _TLS_IO_ERRORS))


def translate_error(exc: BaseException | None, address: Address, action: str) -> ConnectionFailure:
    """The driver's error for an outside failure while ``action``-ing with ``address``.

    Timeouts become NetworkTimeout; OSError, ssl errors and EOF (``exc`` None: the peer closed)
    become AutoReconnect; anything already a ConnectionFailure passes through.
    """
    where = format_address(address)
    if isinstance(exc, ConnectionFailure):
        return exc
    if isinstance(exc, ProxyError):
        if isinstance(exc.__cause__, TimeoutError):
            return NetworkTimeout(f"{where}: {exc} during {action}")
        return AutoReconnect(f"{where}: {exc} during {action}")
    if isinstance(exc, TimeoutError | socket.timeout):
        return NetworkTimeout(f"{where}: timed out during {action}")
    if exc is None or isinstance(exc, EOFError):
        return AutoReconnect(f"{where}: connection closed by the peer during {action}")
    if isinstance(exc, ssl.SSLError):
        reason = getattr(exc, "verify_message", None) or exc.reason or str(exc)
        return AutoReconnect(f"{where}: TLS error during {action}: {reason}")
    if isinstance(exc, OSError):
        return AutoReconnect(f"{where}: {exc.strerror or exc} during {action}")
    return AutoReconnect(f"{where}: {exc!r} during {action}")
