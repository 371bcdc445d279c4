"""A small HTTP/1.1 GET over asyncio streams, for cloud metadata endpoints.

The built-in MONGODB-OIDC environments ask a link-local metadata service for a token (Azure
IMDS, the GCP metadata server). Those are plain ``http://`` URLs answering one small body, so
a full HTTP library is not needed: one request with ``Connection: close``, the body read to
its ``Content-Length``, to the end of its chunks, or to EOF. Nothing blocks the event loop;
the whole exchange runs under one deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["HttpResponse", "http_get"]

#: A metadata answer is small; more than this is not one.
_MAX_BODY = 1024 * 1024


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A status code and the body (headers lower-cased)."""

    status: int
    body: bytes = field(repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


async def http_get(
    url: str, headers: Mapping[str, str] | None = None, *, deadline: float
) -> HttpResponse:
    """GET ``url`` (``http://`` only) by ``deadline`` (a loop time); OSError, TimeoutError
    or ValueError on failure."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"only http:// URLs are supported, not {url!r}")
    host = parts.hostname
    port = parts.port or 80
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host_header = host if parts.port is None else f"{host}:{port}"
    lines = [f"GET {target} HTTP/1.1", f"Host: {host_header}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    async with asyncio.timeout_at(deadline):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(request)
            await writer.drain()
            return await _read_response(reader)
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass


async def _read_response(reader: asyncio.StreamReader) -> HttpResponse:
    status_line = (await reader.readline()).decode("latin-1").strip()
    pieces = status_line.split(" ", 2)
    if len(pieces) < 2 or not pieces[0].startswith("HTTP/") or not pieces[1].isdigit():
        raise ValueError(f"not an HTTP response: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while True:
        line = (await reader.readline()).decode("latin-1")
        if line in ("\r\n", "\n", ""):
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunks(reader)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > _MAX_BODY:
            raise ValueError("HTTP response body too large")
        body = await reader.readexactly(length)
    else:
        body = await reader.read(_MAX_BODY)
    return HttpResponse(int(pieces[1]), body, headers)


async def _read_chunks(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readline()
        if len(body) > _MAX_BODY:
            raise ValueError("HTTP response body too large")
