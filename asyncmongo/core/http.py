"""HTTP/1.1 as bytes in, values out (sans-I/O): the requests MONGODB-AWS makes to find its
credentials (STS, the ECS container endpoint, EC2 instance metadata).

One request per connection (``Connection: close``): :func:`encode_request` gives the bytes
to send, :class:`ResponseParser` is fed what arrives (``feed``, then ``feed_eof`` when the
peer closes) and gives the :class:`HttpResponse` once it is complete. Bodies are delimited by
``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the connection (RFC 9112
section 6.3). Nothing here touches a socket; ``asyncmongo.runtime.http`` does.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["HttpError", "HttpRequest", "HttpResponse", "ResponseParser", "Url", "encode_request"]

#: A response larger than this is refused (credentials documents are a few kilobytes).
MAX_RESPONSE_SIZE = 1024 * 1024


class HttpError(ValueError):
    """A malformed URL or response."""


@dataclass(frozen=True, slots=True)
class Url:
    """An ``http``/``https`` URL split into what a connection and a request line need."""

    scheme: str
    host: str
    port: int
    target: str

    @classmethod
    def parse(cls, text: str) -> Url:
        parts = urllib.parse.urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HttpError(f"not an http(s) URL: {text!r}")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise HttpError(f"bad port in URL {text!r}") from None
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return cls(parts.scheme, parts.hostname, port, target)

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    def join(self, path: str) -> Url:
        """This URL's scheme, host and port with ``path`` (an absolute path) as target."""
        return Url(self.scheme, self.host, self.port, path if path.startswith("/") else "/" + path)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.target}"


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request; ``headers`` are sent as given (``Host``, ``Content-Length`` and
    ``Connection: close`` are added)."""

    method: str
    url: Url
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A complete response; header names are lower-cased."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def encode_request(request: HttpRequest) -> bytes:
    """The request's bytes: request line, headers, blank line, body."""
    lines = [f"{request.method} {request.url.target} HTTP/1.1", f"Host: {request.url.host_header}"]
    for name, value in request.headers.items():
        if "\r" in name + value or "\n" in name + value:
            raise HttpError(f"header {name!r} contains a line break")
        lines.append(f"{name}: {value}")
    if request.body or request.method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(request.body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + request.body


class ResponseParser:
    """Reads one response from the bytes fed to it."""

    __slots__ = ("_buffer", "_eof", "_head")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._eof = False
        self._head: tuple[int, str, dict[str, str]] | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) > MAX_RESPONSE_SIZE:
            raise HttpError(f"response larger than {MAX_RESPONSE_SIZE} bytes")

    def feed_eof(self) -> None:
        self._eof = True

    def next_response(self) -> HttpResponse | None:
        """The response once complete, None while more bytes are needed; HttpError if it is
        malformed or the connection ended early."""
        if self._head is None:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                self._require_more("the response head")
                return None
            self._head = _parse_head(bytes(self._buffer[:end]))
            del self._buffer[: end + 4]
        status, reason, headers = self._head
        body = self._body(headers)
        if body is None:
            return None
        return HttpResponse(status, reason, headers, body)

    def _body(self, headers: Mapping[str, str]) -> bytes | None:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return self._chunked()
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise HttpError(f"bad Content-Length {length!r}")
            if len(self._buffer) < int(length):
                self._require_more("the body")
                return None
            return bytes(self._buffer[: int(length)])
        return bytes(self._buffer) if self._eof else None

    def _chunked(self) -> bytes | None:
        body = bytearray()
        position = 0
        while True:
            end = self._buffer.find(b"\r\n", position)
            if end < 0:
                self._require_more("a chunk")
                return None
            size_text = bytes(self._buffer[position:end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpError(f"bad chunk size {size_text!r}") from None
            start = end + 2
            if size == 0:
                return bytes(body)  # trailers, if any, are not needed
            if len(self._buffer) < start + size + 2:
                self._require_more("a chunk")
                return None
            body += self._buffer[start : start + size]
            position = start + size + 2

    def _require_more(self, what: str) -> None:
        """More bytes are needed: an error once the connection has ended."""
        if self._eof:
            raise HttpError(f"the connection closed in the middle of {what}")


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise HttpError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise HttpError(f"bad header line {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(code), reason, headers
