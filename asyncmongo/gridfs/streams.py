"""The user's streams: a source to upload from, a destination to download into.

A source is bytes-like (bytes, bytearray, memoryview) or any object with ``read(size)``; a
destination is any object with ``write(data)``. Either method may be a plain function (a file
opened with ``open()``, ``io.BytesIO``) or a coroutine function (an async file, an asyncio
``StreamWriter``-like object whose ``write`` returns an awaitable): the result is awaited
when it is awaitable, so both kinds work.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

from asyncmongo.errors import InvalidArgument

__all__ = ["read_pieces", "write_to"]


async def read_pieces(source: Any, size: int) -> AsyncIterator[bytes]:
    """The source's bytes in pieces of at most ``size`` (until EOF; the source is not
    closed)."""
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source).cast("B")
        for start in range(0, len(view), size):
            yield bytes(view[start:start + size])
        return
    read = getattr(source, "read", None)
    if not callable(read):
        raise InvalidArgument(
            f"source must be bytes-like or have a read() method, not {type(source).__name__}"
        )
    while True:
        piece = read(size)
        if inspect.isawaitable(piece):
            piece = await piece
        if not piece:
            return
        if not isinstance(piece, bytes | bytearray | memoryview):
            raise InvalidArgument(f"source.read() returned {type(piece).__name__}, not bytes")
        yield bytes(piece)


async def write_to(destination: Any, data: bytes) -> None:
    """``destination.write(data)``, awaited when it returns an awaitable."""
    write = getattr(destination, "write", None)
    if not callable(write):
        raise InvalidArgument(
            f"destination must have a write() method, not {type(destination).__name__}"
        )
    result = write(data)
    if inspect.isawaitable(result):
        await result
