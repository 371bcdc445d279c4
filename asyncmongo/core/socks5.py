"""The client side of a SOCKS5 CONNECT (RFC 1928) with username/password auth (RFC 1929),
sans-I/O: bytes in, bytes to send out.

SOCKS5 spec, "Connection Establishment": the greeting offers "no authentication" alone, or
with "username/password" when both proxy credentials are set; the destination host goes to
the proxy as given, unresolved (ATYP 3, a domain name; IP literals as ATYP 1 or 4), so the
proxy does the DNS lookup::

    handshake = Socks5Handshake("db.example.com", 27017, credentials=None)
    send(handshake.start())
    while not handshake.done:
        send(handshake.receive_data(recv()))   # raises Socks5Error on a refusal
    handshake.leftover                         # bytes after the reply (the server's)
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Callable

__all__ = ["Socks5Error", "Socks5Handshake", "check_credentials"]

_Handler = Callable[[bytes], bytes]

VERSION = 5
AUTH_VERSION = 1
NO_AUTHENTICATION = 0
USERNAME_PASSWORD = 2
NO_ACCEPTABLE_METHODS = 0xFF
CONNECT = 1
ATYP_IPV4 = 1
ATYP_DOMAIN = 3
ATYP_IPV6 = 4

#: RFC 1928 section 6, the REP field of a refused CONNECT.
REPLY_MESSAGES = {
    1: "general SOCKS server failure",
    2: "connection not allowed by ruleset",
    3: "network unreachable",
    4: "host unreachable",
    5: "connection refused",
    6: "TTL expired",
    7: "command not supported",
    8: "address type not supported",
}


class Socks5Error(Exception):
    """The proxy refused the handshake, the authentication or the connection, or spoke
    something that is not SOCKS5. The message says which, in the proxy's terms."""


class _State(enum.Enum):
    IDLE = "idle"
    GREETING_SENT = "greeting sent"
    AUTH_SENT = "authentication sent"
    CONNECT_SENT = "connect sent"
    DONE = "done"


def check_credentials(username: str, password: str) -> None:
    """RFC 1929: each of username and password is 1 to 255 bytes (UTF-8 here)."""
    for name, value in (("proxyUsername", username), ("proxyPassword", password)):
        if not 0 < len(value.encode()) <= 255:
            raise ValueError(f"{name} must be 1 to 255 bytes in UTF-8")


def encode_destination(host: str, port: int) -> bytes:
    """ATYP, address and port of a CONNECT request: IP literals as such, any other host as
    a domain name the proxy resolves."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        try:
            name = host.encode("idna")
        except UnicodeError as exc:
            message = f"host name {host!r} cannot be sent to a SOCKS5 proxy: {exc}"
            raise Socks5Error(message) from None
        if not 0 < len(name) <= 255:
            raise Socks5Error(f"host name {host!r} is too long for SOCKS5") from None
        address = bytes([ATYP_DOMAIN, len(name)]) + name
    else:
        address = bytes([ATYP_IPV4 if ip.version == 4 else ATYP_IPV6]) + ip.packed
    return address + port.to_bytes(2, "big")


class Socks5Handshake:
    """One CONNECT handshake to ``host:port``; ``credentials`` is (username, password)."""

    __slots__ = ("_buffer", "_credentials", "_host", "_port", "_state", "leftover")

    def __init__(self, host: str, port: int, credentials: tuple[str, str] | None) -> None:
        self._host = host
        self._port = port
        self._credentials = credentials
        self._state = _State.IDLE
        self._buffer = b""
        self.leftover = b""

    def __repr__(self) -> str:
        return f"<Socks5Handshake to {self._host}:{self._port}, {self._state.value}>"

    @property
    def done(self) -> bool:
        return self._state is _State.DONE

    def start(self) -> bytes:
        """The greeting: the authentication methods offered."""
        methods = [NO_AUTHENTICATION]
        if self._credentials is not None:
            methods.append(USERNAME_PASSWORD)
        self._state = _State.GREETING_SENT
        return bytes([VERSION, len(methods), *methods])

    def receive_data(self, data: bytes) -> bytes:
        """Take bytes from the proxy; return what to send next (b"" if nothing yet).

        An empty ``data`` means the proxy closed the connection.
        """
        if not data:
            raise Socks5Error(f"the proxy closed the connection ({self._state.value})")
        self._buffer += data
        out = b""
        while True:
            step = self._step()
            if step is None:
                return out
            out += step

    def _step(self) -> bytes | None:
        """Handle one complete message from the buffer; None when more bytes are needed."""
        if self._state is _State.GREETING_SENT:
            return self._take(2, self._on_method)
        if self._state is _State.AUTH_SENT:
            return self._take(2, self._on_auth)
        if self._state is _State.CONNECT_SENT:
            size = self._reply_size()
            return None if size is None else self._take(size, self._on_reply)
        return None

    def _take(self, size: int, handle: _Handler) -> bytes | None:
        if len(self._buffer) < size:
            return None
        message, self._buffer = self._buffer[:size], self._buffer[size:]
        return handle(message)

    def _on_method(self, message: bytes) -> bytes:
        version, method = message
        _check_version(version, VERSION)
        if method == USERNAME_PASSWORD and self._credentials is not None:
            self._state = _State.AUTH_SENT
            return self._auth_request(*self._credentials)
        if method == NO_AUTHENTICATION:
            return self._connect_request()
        if method == NO_ACCEPTABLE_METHODS:
            offered = "no authentication or username/password" if self._credentials else (
                "no authentication (the proxy may need proxyUsername and proxyPassword)"
            )
            raise Socks5Error(f"the proxy accepts none of the methods offered: {offered}")
        raise Socks5Error(f"the proxy chose authentication method {method}, not offered")

    @staticmethod
    def _auth_request(username: str, password: str) -> bytes:
        user, secret = username.encode(), password.encode()
        return bytes([AUTH_VERSION, len(user)]) + user + bytes([len(secret)]) + secret

    def _on_auth(self, message: bytes) -> bytes:
        version, status = message
        _check_version(version, AUTH_VERSION)
        if status != 0:
            user = self._credentials[0] if self._credentials else ""
            raise Socks5Error(
                f"the proxy refused username/password authentication for user {user!r}: "
                "check proxyUsername and proxyPassword"
            )
        return self._connect_request()

    def _connect_request(self) -> bytes:
        self._state = _State.CONNECT_SENT
        return bytes([VERSION, CONNECT, 0]) + encode_destination(self._host, self._port)

    def _reply_size(self) -> int | None:
        """The size of the CONNECT reply, once its header says (VER REP RSV ATYP ...)."""
        if len(self._buffer) < 5:
            return None
        atyp = self._buffer[3]
        if atyp == ATYP_IPV4:
            return 4 + 4 + 2
        if atyp == ATYP_IPV6:
            return 4 + 16 + 2
        if atyp == ATYP_DOMAIN:
            return 4 + 1 + self._buffer[4] + 2
        _check_version(self._buffer[0], VERSION)
        self._check_reply_code(self._buffer[1])
        raise Socks5Error(f"the proxy replied with unknown address type {atyp}")

    def _on_reply(self, message: bytes) -> bytes:
        _check_version(message[0], VERSION)
        self._check_reply_code(message[1])
        self._state = _State.DONE
        self.leftover, self._buffer = self._buffer, b""
        return b""

    def _check_reply_code(self, code: int) -> None:
        if code != 0:
            reason = REPLY_MESSAGES.get(code, f"reply code {code}")
            raise Socks5Error(
                f"the proxy could not connect to {self._host}:{self._port}: {reason}"
            )


def _check_version(version: int, expected: int) -> None:
    if version != expected:
        raise Socks5Error(f"not a SOCKS5 proxy (version byte {version}, expected {expected})")

