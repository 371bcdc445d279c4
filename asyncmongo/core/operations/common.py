"""Pieces the command families share: the namespace, sort/index/hint documents, concerns.

PyMongo accepts sort and index keys as a key name, a list of ``(key, direction)`` pairs or a
mapping; every operation turns them into the ordered document the server expects here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection import PRIMARY, ReadPreference
from asyncmongo.errors import InvalidArgument, InvalidName

__all__ = [
    "ASCENDING",
    "DESCENDING",
    "CollectionContext",
    "Namespace",
    "check_collection_name",
    "check_database_name",
    "check_document",
    "hint_value",
    "index_keys",
    "index_name",
    "sort_document",
]

ASCENDING = 1
DESCENDING = -1
GEO2D = "2d"
GEOSPHERE = "2dsphere"
HASHED = "hashed"
TEXT = "text"

_DB_FORBIDDEN = frozenset('/\\. "$\x00')


def check_database_name(name: object) -> str:
    """A database name the server accepts (no ``/\\. "$`` or NUL, not empty).

    ``isdisjoint`` walks the name in C: every ``client.db`` builds a database and checks its
    name, and a generator over the characters cost several bytecodes per character."""
    if not isinstance(name, str):
        raise InvalidArgument(f"a database name must be a str, not {type(name).__name__}")
    if not name or not _DB_FORBIDDEN.isdisjoint(name):
        raise InvalidName(f"invalid database name {name!r}")
    return name


def check_collection_name(name: object) -> str:
    """A collection name the server accepts (not empty, no ``$`` except ``$cmd``-like, no NUL,
    no leading or trailing dot)."""
    if not isinstance(name, str):
        raise InvalidArgument(f"a collection name must be a str, not {type(name).__name__}")
    if not name or ".." in name or name[0] == "." or name[-1] == ".":
        raise InvalidName(f"invalid collection name {name!r}")
    if "$" in name and not (name.startswith("oplog.$main") or name.startswith("$cmd")):
        raise InvalidName(f"collection names must not contain '$': {name!r}")
    if "\x00" in name:
        raise InvalidName("collection names must not contain the null character")
    return name


@dataclass(frozen=True, slots=True)
class Namespace:
    """``database.collection``."""

    database: str
    collection: str

    @property
    def full_name(self) -> str:
        return f"{self.database}.{self.collection}"

    @classmethod
    def parse(cls, full_name: str) -> Namespace:
        database, _, collection = full_name.partition(".")
        return cls(database, collection)


@dataclass(frozen=True, slots=True)
class CollectionContext:
    """The inherited settings an operation on one collection (or database) runs with."""

    namespace: Namespace
    codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
    read_preference: ReadPreference = PRIMARY
    read_concern: ReadConcern = field(default_factory=ReadConcern)
    write_concern: WriteConcern = field(default_factory=WriteConcern)

    @property
    def database(self) -> str:
        return self.namespace.database

    @property
    def collection(self) -> str:
        return self.namespace.collection


def check_document(value: object, what: str) -> Mapping[str, Any]:
    """``value`` must be a mapping (filters, replacement documents, options documents)."""
    if type(value) is dict:  # the usual case, without the ABC instance check
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{what} must be a mapping (dict), not {type(value).__name__}")
    return value


def index_keys(
    keys: str | Sequence[Any] | Mapping[str, Any], what: str = "key"
) -> list[tuple[str, Any]]:
    """``"a"``, ``[("a", 1), ("b", -1)]``, ``["a", "b"]`` or ``{"a": 1}`` as (key, direction)
    pairs (a bare name means ascending)."""
    if isinstance(keys, str):
        return [(keys, ASCENDING)]
    if isinstance(keys, Mapping):
        pairs = list(keys.items())
    elif isinstance(keys, Sequence):
        pairs = []
        for item in keys:
            if isinstance(item, str):
                pairs.append((item, ASCENDING))
            elif isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str):
                pairs.append((item[0], item[1]))
            else:
                raise InvalidArgument(f"{what} items must be (name, direction) pairs: {item!r}")
    else:
        raise InvalidArgument(f"{what} must be a str, a list or a mapping, not {keys!r}")
    if not pairs:
        raise InvalidArgument(f"{what} must not be empty")
    for name, direction in pairs:
        if not isinstance(name, str):
            raise InvalidArgument(f"{what} names must be str, not {name!r}")
        if not isinstance(direction, int | float | str | Mapping) or isinstance(direction, bool):
            raise InvalidArgument(f"bad {what} direction {direction!r} for {name!r}")
    return pairs


def sort_document(sort: Any) -> dict[str, Any] | None:
    """The ``sort`` document of a command (None: no sort)."""
    if sort is None:
        return None
    return dict(index_keys(sort, "sort"))


def hint_value(hint: Any) -> str | dict[str, Any] | None:
    """An index name stays a string; key patterns become a document."""
    if hint is None or isinstance(hint, str):
        return hint
    return dict(index_keys(hint, "hint"))


def index_name(keys: Sequence[tuple[str, Any]]) -> str:
    """Index-management spec: ``<key>_<direction>`` joined by ``_`` (``a_1_b_-1``)."""
    return "_".join(f"{name}_{direction}" for name, direction in keys)


def put(command: dict[str, Any], name: str, value: Any) -> None:
    """Set an optional command field: None means "not given" and is omitted."""
    if value is not None:
        command[name] = value


def put_concerns(
    command: dict[str, Any],
    read_concern: ReadConcern | None = None,
    write_concern: WriteConcern | None = None,
) -> None:
    """Add readConcern/writeConcern unless it is the server default (spec: omit it)."""
    if read_concern is not None and not read_concern.is_server_default:
        command["readConcern"] = read_concern.document
    if write_concern is not None and not write_concern.is_server_default:
        command["writeConcern"] = write_concern.document
