"""The PyMongo-compatible client and the API classes reached from it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pymongo.monitoring

from asyncmongo.change_stream import AsyncChangeStream
from asyncmongo.client import AsyncMongoClient as _AsyncMongoClient
from asyncmongo.collection import AsyncCollection as _AsyncCollection
from asyncmongo.compat._errors import as_pymongo_error
from asyncmongo.compat._values import pymongo_codec_options
from asyncmongo.compat._wrap import _wrap, compatible, compatible_class
from asyncmongo.core.address import Address
from asyncmongo.core.operations.cursors import CursorPage
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import Selection
from asyncmongo.cursor import AsyncCommandCursor as _AsyncCommandCursor
from asyncmongo.cursor import AsyncCursor as _AsyncCursor
from asyncmongo.database import AsyncDatabase as _AsyncDatabase
from asyncmongo.errors import InvalidOperation, MongoError
from asyncmongo.gridfs import AsyncGridFSBucket as _AsyncGridFSBucket
from asyncmongo.gridfs.grid_in import AsyncGridIn as _AsyncGridIn
from asyncmongo.gridfs.grid_out import AsyncGridOut as _AsyncGridOut
from asyncmongo.sessions import AsyncClientSession as _AsyncClientSession
from asyncmongo.sessions.transaction import TransactionContext as _TransactionContext

__all__ = [
    "AsyncChangeStream",
    "AsyncClientSession",
    "AsyncCollection",
    "AsyncCommandCursor",
    "AsyncCursor",
    "AsyncDatabase",
    "AsyncGridFSBucket",
    "AsyncMongoClient",
]

AsyncDatabase = compatible_class(_AsyncDatabase)
AsyncCollection = compatible_class(_AsyncCollection)
AsyncCursor = compatible_class(_AsyncCursor)
AsyncCommandCursor = compatible_class(_AsyncCommandCursor)
AsyncClientSession = compatible_class(_AsyncClientSession)
AsyncChangeStream = compatible_class(AsyncChangeStream)  # type: ignore[misc]
compatible_class(_AsyncGridIn)


async def _lines(grid_out: _AsyncGridOut) -> AsyncIterator[bytes]:
    while line := await grid_out.readline():
        yield line


compatible_class(
    _AsyncGridOut,
    {
        # PyMongo's GridOut iterates as a file object does, line by line (asyncmongo's
        # yields chunks).
        "__aiter__": lambda self: _lines(self),
    },
)
compatible_class(_TransactionContext)


class AsyncGridOutCursor(AsyncCursor):  # type: ignore[valid-type,misc]
    """PyMongo's ``AsyncGridOutCursor``: a find on a bucket's files collection that yields
    an ``AsyncGridOut`` per files document (asyncmongo's bucket yields the documents)."""

    __slots__ = ()

    def _take(self, page: CursorPage) -> None:
        files = self._collection
        chunks = files.database.get_collection(
            files.name[: -len("files")] + "chunks",
            codec_options=files.codec_options,
            read_preference=files.read_preference,
            read_concern=files.read_concern,
        )
        grid_outs = [
            compatible(_AsyncGridOut(chunks, document, self._session))
            for document in page.documents
        ]
        super()._take(page.with_changes(documents=grid_outs))


def _find_grid_outs(self: _AsyncGridFSBucket, *args: Any, **kwargs: Any) -> Any:
    cursor = _AsyncGridFSBucket.find(self, *args, **kwargs)
    cursor.__class__ = AsyncGridOutCursor
    return cursor


AsyncGridFSBucket = compatible_class(_AsyncGridFSBucket)
AsyncGridFSBucket.find = _wrap(_find_grid_outs)  # type: ignore[method-assign]
AsyncGridFSBucket.find.__doc__ = (
    "A cursor over the matching files, yielding an AsyncGridOut for each, as PyMongo's."
)


def _registered_listeners() -> list[object]:
    """The listeners registered with ``pymongo.monitoring.register``, which PyMongo's
    clients add to their own, in registration order and each once."""
    registry = pymongo.monitoring._LISTENERS
    found: dict[int, object] = {}
    for group in registry:
        for listener in group:
            found.setdefault(id(listener), listener)
    return list(found.values())


def _init(self: _AsyncMongoClient, *args: Any, **kwargs: Any) -> None:
    """As asyncmongo's AsyncMongoClient, decoding to PyMongo's bson classes and adding the
    listeners registered with ``pymongo.monitoring.register``."""
    registered = _registered_listeners()
    if registered:
        kwargs["event_listeners"] = [*kwargs.get("event_listeners", ()), *registered]
    try:
        _AsyncMongoClient.__init__(self, *args, **kwargs)
    except MongoError as exc:
        as_pymongo_error(exc)
        raise
    self._codec_options = pymongo_codec_options(self._codec_options)


async def _connected(client: _AsyncMongoClient) -> None:
    try:
        await client.aconnect()
    except MongoError as exc:
        as_pymongo_error(exc)
        raise


async def _writable_server(client: _AsyncMongoClient) -> Address:
    """The server writes go to now, selected as PyMongo's properties do (waiting for one
    within serverSelectionTimeoutMS)."""
    await _connected(client)
    try:
        server = await client._topology_runtime.select_server(Selection.write())
    except MongoError as exc:
        as_pymongo_error(exc)
        raise
    return server.address


async def _address(self: _AsyncMongoClient) -> Address | None:
    description = self.topology_description
    if (
        description.topology_type is TopologyType.SHARDED
        and len(description.servers) > 1
    ):
        exc = InvalidOperation(
            'Cannot use "address" property when load balancing among mongoses, use "nodes" '
            "instead."
        )
        raise as_pymongo_error(exc)
    return await _writable_server(self)


async def _primary(self: _AsyncMongoClient) -> Address | None:
    await _connected(self)
    return _AsyncMongoClient.primary.fget(self)  # type: ignore[attr-defined,no-any-return]


async def _secondaries(self: _AsyncMongoClient) -> set[Address]:
    await _connected(self)
    return set(_AsyncMongoClient.secondaries.fget(self))  # type: ignore[attr-defined]


async def _arbiters(self: _AsyncMongoClient) -> set[Address]:
    await _connected(self)
    return set(_AsyncMongoClient.arbiters.fget(self))  # type: ignore[attr-defined]


async def _is_primary(self: _AsyncMongoClient) -> bool:
    await _writable_server(self)
    return _AsyncMongoClient.is_primary.fget(self)  # type: ignore[attr-defined,no-any-return]


async def _is_mongos(self: _AsyncMongoClient) -> bool:
    await _writable_server(self)
    return _AsyncMongoClient.is_mongos.fget(self)  # type: ignore[attr-defined,no-any-return]


AsyncMongoClient = compatible_class(
    _AsyncMongoClient,
    {
        "__init__": _init,
        "__doc__": (
            "asyncmongo's client, speaking PyMongo's language: the documents it reads hold "
            "PyMongo's bson classes, its errors are PyMongo's (and asyncmongo's) classes, its "
            "write results are PyMongo's, and address/primary/secondaries/arbiters/is_primary/"
            "is_mongos are awaited, as in PyMongo's AsyncMongoClient."
        ),
        # PyMongo's class constants: the host and port a client without a URI connects to.
        "HOST": "localhost",
        "PORT": 27017,
        "address": property(_address),
        "primary": property(_primary),
        "secondaries": property(_secondaries),
        "arbiters": property(_arbiters),
        "is_primary": property(_is_primary),
        "is_mongos": property(_is_mongos),
    },
)
