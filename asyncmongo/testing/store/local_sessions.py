"""The logical session cache a mongod keeps in memory, as the ``$listLocalSessions``
aggregation stage shows it.

Every command that carries an ``lsid`` registers (or refreshes) its session with the time it
was last used; ``endSessions`` removes it. ``$listLocalSessions`` (first stage of a collection-less
``aggregate: 1``, on any database) lists them as mongod does: ``{_id: {id, uid}, lastUse}``, where
``uid`` is the SHA-256 of the session's user. The store does not know users (the server front
end authenticates), so every session belongs to the unauthenticated user (SHA-256 of the empty
string), which is what mongod reports when authentication is off.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.binary import Binary
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.values import deep_copy

STAGE = "$listLocalSessions"
#: The uid of sessions without an authenticated user: SHA-256 of "".
_ANONYMOUS_UID = Binary(hashlib.sha256(b"").digest(), 0)
#: The options the stage takes (mongod's ListSessionsSpec).
_OPTIONS = frozenset({"allUsers", "users", "$_internalPredicate"})


class LocalSessionCache:
    """lsid key -> (the lsid document, when it was last used)."""

    def __init__(self) -> None:
        self._sessions: dict[Any, tuple[Mapping[str, Any], datetime.datetime]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def __repr__(self) -> str:
        return f"LocalSessionCache({len(self._sessions)} sessions)"

    def touch(self, lsid_key: Any, lsid: Mapping[str, Any], now: datetime.datetime) -> None:
        """A command used this session now."""
        self._sessions[lsid_key] = (lsid, now)

    def end(self, lsid_key: Any) -> None:
        """``endSessions``: the session leaves the cache."""
        self._sessions.pop(lsid_key, None)

    def documents(self, spec: Any) -> list[dict[str, Any]]:
        """The documents ``{$listLocalSessions: spec}`` starts a pipeline with."""
        if not isinstance(spec, Mapping):
            raise StoreError(14, "$listLocalSessions must take a nested object but found: "
                                 f"{spec!r}")
        unknown = set(spec) - _OPTIONS
        if unknown:
            raise StoreError(40415, f"BSON field '$listLocalSessions.{sorted(unknown)[0]}' is "
                                    "an unknown field.")
        users = spec.get("users")
        if users is not None and spec.get("allUsers"):
            raise bad_value("Use of 'allUsers' is mutually exclusive with 'users'")
        if users is not None and not isinstance(users, list):
            raise StoreError(14, "BSON field '$listLocalSessions.users' is the wrong type, "
                                 "expected type 'array'")
        if users:
            return []  # only the unauthenticated user has sessions here
        return [{"_id": {"id": deep_copy(lsid.get("id")), "uid": _ANONYMOUS_UID},
                 "lastUse": last_use}
                for lsid, last_use in self._sessions.values()]


def is_list_local_sessions(pipeline: Any) -> bool:
    """True when the pipeline starts with ``$listLocalSessions``."""
    return (isinstance(pipeline, list) and bool(pipeline) and isinstance(pipeline[0], Mapping)
            and STAGE in pipeline[0])


def check_namespace(target: Any) -> None:
    """mongod runs the stage only collection-less (``aggregate: 1``), on any database."""
    if target != 1:
        raise StoreError(73, "$listLocalSessions must be run against the database with "
                             "{aggregate: 1}, not a collection")
