"""asyncmongo: an asyncio-native MongoDB driver for Python 3.11+.

The public names, PyMongo's where they exist: the client, databases, collections,
cursors and change streams, read preference and concerns, the write models and results, and
the errors module. GridFS is the subpackage :mod:`asyncmongo.gridfs` (PyMongo's ``gridfs``).
"""

from __future__ import annotations

from asyncmongo import errors
from asyncmongo.change_stream import AsyncChangeStream
from asyncmongo.client import AsyncMongoClient
from asyncmongo.collection import AsyncCollection, ReturnDocument
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.common import (
    ASCENDING,
    DESCENDING,
    GEO2D,
    GEOSPHERE,
    HASHED,
    TEXT,
)
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.wire.handshake import DriverInfo, ServerApi
from asyncmongo.cursor import AsyncCommandCursor, AsyncCursor, CursorType
from asyncmongo.database import AsyncDatabase
from asyncmongo.monitoring import CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent
from asyncmongo.operations import (
    DeleteMany,
    DeleteOne,
    IndexModel,
    InsertOne,
    ReplaceOne,
    SearchIndexModel,
    UpdateMany,
    UpdateOne,
)
from asyncmongo.results import (
    BulkWriteResult,
    ClientBulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)
from asyncmongo.runtime.timeout import timeout
from asyncmongo.sessions import AsyncClientSession, SessionOptions, TransactionOptions

__version__ = "0.1.0.dev0"

__all__ = [
    "ASCENDING",
    "DESCENDING",
    "GEO2D",
    "GEOSPHERE",
    "HASHED",
    "TEXT",
    "AsyncChangeStream",
    "AsyncClientSession",
    "AsyncCollection",
    "AsyncCommandCursor",
    "AsyncCursor",
    "AsyncDatabase",
    "AsyncMongoClient",
    "BulkWriteResult",
    "ClientBulkWriteResult",
    "CommandFailedEvent",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "CursorType",
    "DeleteMany",
    "DeleteOne",
    "DeleteResult",
    "DriverInfo",
    "IndexModel",
    "InsertManyResult",
    "InsertOne",
    "InsertOneResult",
    "ReadConcern",
    "ReadPreference",
    "ReplaceOne",
    "ReturnDocument",
    "SearchIndexModel",
    "ServerApi",
    "SessionOptions",
    "TransactionOptions",
    "UpdateMany",
    "UpdateOne",
    "UpdateResult",
    "WriteConcern",
    "__version__",
    "errors",
    "timeout",
]
