"""The PyMongo-compatible entry: ``from asyncmongo.compat import AsyncMongoClient``.

An application or library written for PyMongo's ``AsyncMongoClient`` (or Motor) runs on
asyncmongo after changing that one import. The compatible client is asyncmongo's client
(the same engine, speed and options) that hands PyMongo's objects back:

- documents read through it hold PyMongo's bson classes (``bson.ObjectId``,
  ``bson.Int64``, ``bson.Decimal128``, ``bson.Binary``, ...), so pydantic models and ODMs
  validating with PyMongo's classes accept them;
- its errors are instances of PyMongo's classes (``pymongo.errors.DuplicateKeyError``, ...)
  and of asyncmongo's, so both ``except`` clauses catch them;
- write results are ``pymongo.results`` classes;
- ``address``, ``primary``, ``secondaries``, ``arbiters``, ``is_primary`` and
  ``is_mongos`` are awaited, as in PyMongo (asyncmongo's own client reads them without
  waiting).

Databases, collections, cursors, sessions, change streams and GridFS objects reached from
it are compatible too. PyMongo's objects given to it (IndexModel, write models, read
preferences, concerns, DriverInfo, ServerApi, CodecOptions) are accepted, as they are by
asyncmongo's own client. This module needs PyMongo installed; asyncmongo itself never
imports PyMongo.
"""

from __future__ import annotations

try:
    import bson as _pymongo_bson  # noqa: F401
    import pymongo as _pymongo  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without PyMongo
    raise ImportError(
        "asyncmongo.compat hands back PyMongo's types and errors, so it needs PyMongo "
        "(pip install pymongo); asyncmongo's own AsyncMongoClient does not"
    ) from exc

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Type checkers see asyncmongo's classes (with their generics); the compatible
    # subclasses add no API of their own, except that the server properties are awaited.
    from asyncmongo.change_stream import AsyncChangeStream
    from asyncmongo.client import AsyncMongoClient
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.cursor import AsyncCommandCursor, AsyncCursor
    from asyncmongo.database import AsyncDatabase
    from asyncmongo.gridfs import AsyncGridFSBucket
    from asyncmongo.sessions import AsyncClientSession
else:
    from asyncmongo.compat._client import (
        AsyncChangeStream,
        AsyncClientSession,
        AsyncCollection,
        AsyncCommandCursor,
        AsyncCursor,
        AsyncDatabase,
        AsyncGridFSBucket,
        AsyncMongoClient,
    )

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
