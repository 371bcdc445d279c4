"""What one command runs with: its database, the catalog (or a transaction's view), the
cursors, the clock, and whether it runs inside a transaction."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.types import Timestamp
from asyncmongo.testing.store.cursors import CursorManager
from asyncmongo.testing.store.database import Namespaces, check_collection_name
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.local_sessions import LocalSessionCache


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What the server front end knows about a command besides its document.

    ``now`` is the server's clock for this command ($currentDate, ObjectIds); ``timestamp``
    the cluster time a ``$currentDate: {$type: "timestamp"}`` writes. Session fields
    (``lsid``, ``txnNumber``, ``autocommit``, ``startTransaction``) are read from the command
    itself, as a server does.
    """

    now: datetime.datetime | None = None
    timestamp: Timestamp | None = None
    #: The deployment's current cluster time (no write is newer): snapshot reads are
    #: answered at it, or at their atClusterTime, from the store's history (None: the store
    #: runs without a deployment and a snapshot read sees the current data).
    cluster_time: Timestamp | None = None


@dataclass(frozen=True, slots=True)
class CommandContext:
    """The environment of one command inside the store."""

    db_name: str
    namespaces: Namespaces
    cursors: CursorManager
    now: datetime.datetime
    timestamp: Timestamp | None
    in_transaction: bool
    lsid_key: Any
    new_object_id: Callable[[], Any]
    #: The store's logical session cache ($listLocalSessions), None where there is none.
    local_sessions: LocalSessionCache | None = None


def collection_name(command: Mapping[str, Any], name: str, db_name: str) -> str:
    """The collection a command names as its first value (validated)."""
    value = command[name]
    if not isinstance(value, str):
        raise StoreError(73, f"collection name has invalid type {type(value).__name__}")
    return check_collection_name(db_name, value)


def optional_int(command: Mapping[str, Any], field: str) -> int | None:
    """An integer option (int, Int64 or an integral double), or None when absent."""
    from asyncmongo.testing.store.compare import integral

    if field not in command or command[field] is None:
        return None
    value = command[field]
    whole = integral(value)
    if whole is None:
        raise StoreError(14, f"BSON field '{field}' is the wrong type '"
                             f"{type(value).__name__}', expected types '[long, int, decimal, "
                             "double']")
    return whole


def optional_document(command: Mapping[str, Any], field: str) -> Mapping[str, Any] | None:
    if field not in command or command[field] is None:
        return None
    value = command[field]
    if not isinstance(value, Mapping):
        raise StoreError(14, f"BSON field '{field}' is the wrong type, expected type 'object'")
    return value


def require_list(command: Mapping[str, Any], field: str) -> list[Any]:
    value = command.get(field)
    if not isinstance(value, list):
        raise bad_value(f"BSON field '{field}' is missing or not an array")
    return value
