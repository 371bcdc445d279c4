"""The HTTPS server the simulated KMS providers share: one request per connection, as
libmongocrypt's drivers send them, answered by the provider's ``handle``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from asyncmongo.testing.kms.wrapping import KeyWrapper
from asyncmongo.testing.tcp_service import TcpService

__all__ = ["HttpRequest", "HttpResponse", "KmsHttpServer"]

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
            503: "Service Unavailable"}
_MAX_HEAD = 64 * 1024


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request as received: method, path (no query), query parameters, headers (names
    lower-cased), body, and the TLS client certificate's subject if one was presented."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    peer_certificate: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")

    def form(self) -> dict[str, str]:
        return {name: values[-1] for name, values in parse_qs(self.body.decode()).items()}


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: Any = field(default_factory=dict)

    @classmethod
    def error(cls, status: int, message: str) -> HttpResponse:
        return cls(status, {"error": {"code": _REASONS.get(status, "Error"),
                                      "message": message}})

    def encode(self) -> bytes:
        body = json.dumps(self.body).encode()
        head = (f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Error')}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        return head.encode() + body


class KmsHttpServer(TcpService):
    """An HTTPS server on ``host`` (port 0: a free one) answering with :meth:`handle`.

    ``endpoint`` is ``"127.0.0.1:<port>"``, as master keys and provider settings take it.
    ``fail("network", n)`` closes the next ``n`` connections without answering;
    ``fail("http", n)`` answers them with HTTP 500 (libmongocrypt retries both).
    ``delay_s`` holds every answer back that long (timeout tests).
    """

    provider = "http"

    def __init__(self, ssl_context: ssl.SSLContext, *, host: str = "127.0.0.1", port: int = 0,
                 secret: bytes | None = None) -> None:
        super().__init__(host=host, port=port, ssl_context=ssl_context)
        self.wrapper = KeyWrapper(secret)
        #: Every request answered or failed, in order.
        self.requests: list[HttpRequest] = []
        self._failures: list[str] = []
        self.delay_s = 0.0
        self._request_arrived = asyncio.Event()

    def __repr__(self) -> str:
        state = "listening" if self.listening else "stopped"
        return (f"<{type(self).__name__} {self.endpoint} {state}: {len(self.requests)} requests, "
                f"{len(self._failures)} failures queued>")

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def fail(self, kind: str, times: int = 1) -> None:
        """Make the next ``times`` requests fail: ``"network"`` (connection closed) or
        ``"http"`` (HTTP 500)."""
        if kind not in ("network", "http"):
            raise ValueError(f"fail() takes 'network' or 'http', not {kind!r}")
        self._failures.extend([kind] * times)

    async def wait_for_requests(self, count: int = 1) -> None:
        """Return once ``count`` requests in all have arrived."""
        while len(self.requests) < count:
            self._request_arrived.clear()
            await self._request_arrived.wait()

    def handle(self, request: HttpRequest) -> HttpResponse:
        """The provider's answer to ``request``."""
        raise NotImplementedError

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader, writer)
            if request is None:
                return
            self.requests.append(request)
            self._request_arrived.set()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            failure = self._failures.pop(0) if self._failures else None
            if failure == "network":
                return
            if failure == "http":
                response = HttpResponse.error(500, "simulated internal error")
            else:
                try:
                    response = self.handle(request)
                except (ValueError, KeyError, TypeError) as exc:
                    response = HttpResponse.error(400, f"bad request: {exc}")
            writer.write(response.encode())
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()


async def _read_request(reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> HttpRequest | None:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > _MAX_HEAD:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    ssl_object = writer.get_extra_info("ssl_object")
    peer = None
    with contextlib.suppress(ValueError, AttributeError):
        peer = ssl_object.getpeercert() or None
    return HttpRequest(method, target, headers, body, peer)
