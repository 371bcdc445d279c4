"""The part AsyncDatabase and AsyncCollection share: a name under a parent, and settings.

A database lives under a client, a collection under a database. Each has codec options, a
read preference and read and write concerns, given or inherited from its parent (client ->
database -> collection), and ``with_options`` copies it with some of them replaced. One base
class holds that, so the two API classes only add what is theirs.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from asyncmongo.bson.codec_options import CodecOptions, as_codec_options
from asyncmongo.bson.objectid import ObjectId, new_object_id_bytes
from asyncmongo.core.adopt import adopt_read_concern, adopt_write_concern
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.base import Operation
from asyncmongo.core.operations.cursors import KillCursors
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.selection.read_preference import adopt_read_preference
from asyncmongo.errors import InvalidArgument
from asyncmongo.sessions import AsyncClientSession

__all__ = [
    "ClientScope",
    "DatabaseScope",
    "NamedScope",
    "SettingsSource",
    "check_session",
    "check_timeout_ms",
    "new_id_class",
]

T = TypeVar("T")


class SettingsSource(Protocol):
    """What a scope inherits its settings from (a client or a database)."""

    @property
    def codec_options(self) -> CodecOptions: ...

    @property
    def read_preference(self) -> ReadPreference: ...

    @property
    def write_concern(self) -> WriteConcern: ...

    @property
    def read_concern(self) -> ReadConcern: ...

    @property
    def timeout_ms(self) -> int | None: ...


def check_session(session: Any) -> None:
    """``session=`` must be an AsyncClientSession (or None): refused where it is given, before
    anything runs (a cursor runs its command later)."""
    if session is not None and not isinstance(session, AsyncClientSession):
        raise InvalidArgument(
            f"session must be an AsyncClientSession, not {type(session).__name__}"
        )


def check_timeout_ms(value: object) -> int:
    """A timeoutMS given to the API: a non-negative integer of milliseconds (CSOT: "Drivers
    MUST error if a negative value is specified")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"timeout_ms must be an integer, not {value!r}")
    if value < 0:
        raise InvalidArgument(f"timeout_ms cannot be negative, got {value}")
    return value


class ClientScope(SettingsSource, Protocol):
    """What databases, collections, cursors and change streams need of their client (an
    AsyncMongoClient): they stand below it, so they name it by this protocol."""

    @property
    def topology_description(self) -> TopologyDescription: ...

    def _run(
        self,
        op: Operation[T],
        session: Any = None,
        operation_id: int | None = None,
        *,
        timeout_ms: int | None = None,
        deadline: float | None = None,
        max_time: bool = True,
    ) -> Awaitable[T]: ...

    def _deadline_for(self, timeout_ms: int | None) -> float | None: ...

    def _cursor_dropped(self, kill: KillCursors) -> None: ...

    def _next_operation_id(self) -> int: ...

    def _encrypted_fields_for(self, namespace: str) -> Mapping[str, Any] | bool | None:
        """Automatic encryption's ``encrypted_fields_map`` entry for ``namespace``; False
        when the client has no automatic encryption."""
        ...

    async def drop_database(
        self, name_or_database: Any, session: Any = None, comment: Any = None
    ) -> None: ...


class DatabaseScope(SettingsSource, Protocol):
    """What a collection needs of its database (an AsyncDatabase), which stands above it."""

    @property
    def name(self) -> str: ...

    @property
    def client(self) -> ClientScope: ...

    def get_collection(
        self,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> Any: ...

    async def drop_collection(
        self,
        name_or_collection: Any,
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Any = None,
    ) -> Any: ...

    async def list_collections(
        self,
        session: Any = None,
        filter: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any: ...


P = TypeVar("P", bound=SettingsSource)
_DEFAULT_WRITE_CONCERN = WriteConcern()


class NamedScope(Generic[P]):
    """A named child of ``P`` with its own or inherited settings; equal when the parent and
    the name are, and never truthy (compare with None, as in PyMongo)."""

    __slots__ = (
        "_codec_options",
        "_name",
        "_parent",
        "_read_concern",
        "_read_preference",
        "_timeout_ms",
        "_write_concern",
    )

    #: The hint in the AttributeError for a private name (``{name}`` is the name's repr).
    _ITEM_HINT = "obj[{name}] for an item"

    def __init__(
        self,
        parent: P,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        self._parent = parent
        self._name = name
        self._codec_options = (
            parent.codec_options
            if codec_options is None
            else adopt_codec_options(codec_options, parent.codec_options)
        )
        self._read_preference = adopt_read_preference(read_preference) or parent.read_preference
        self._write_concern = adopt_write_concern(write_concern) or parent.write_concern
        self._read_concern = adopt_read_concern(read_concern) or parent.read_concern
        # CSOT: inherited unless given; once set at a level it cannot become unset below.
        self._timeout_ms = parent.timeout_ms if timeout_ms is None else check_timeout_ms(timeout_ms)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._parent!r}, {self._name!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return self._parent == other._parent and self._name == other._name
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._parent, self._name))

    def __bool__(self) -> bool:
        raise NotImplementedError(
            f"{type(self).__name__} objects do not implement truth value testing; "
            "compare with None"
        )

    def _private_attribute(self, name: str) -> AttributeError:
        """The error for ``obj._x`` (``obj.x`` is ``obj["x"]`` in the subclasses)."""
        hint = self._ITEM_HINT.format(name=repr(name))
        return AttributeError(f"{type(self).__name__} has no attribute {name!r}; use {hint}")

    @property
    def name(self) -> str:
        """The name of this database or collection (a collection's is without the database's)."""
        return self._name

    @property
    def codec_options(self) -> CodecOptions:
        """The codec options documents are decoded and encoded with: given to ``get_database``,
        ``get_collection`` or ``with_options``, else inherited from the parent (client, then
        database)."""
        return self._codec_options

    @property
    def read_preference(self) -> ReadPreference:
        """The read preference of reads through this database or collection: given, else inherited
        from the parent (client, then database). Database commands run with primary unless given
        their own, as in PyMongo."""
        return self._read_preference

    @property
    def write_concern(self) -> WriteConcern:
        """The write concern of writes through this database or collection: given, else inherited
        from the parent (client, then database). Inside a transaction the transaction's write
        concern applies instead."""
        return self._write_concern

    @property
    def read_concern(self) -> ReadConcern:
        """The read concern of reads through this database or collection: given, else inherited from
        the parent (client, then database). Inside a transaction the transaction's read concern
        applies instead."""
        return self._read_concern

    @property
    def timeout_ms(self) -> int | None:
        """The timeoutMS of operations on this scope (None: unset, 0: no limit)."""
        return self._timeout_ms

    def with_options(
        self,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> Any:  # typed by AsyncDatabase's and AsyncCollection's overloads
        """A copy of this database or collection with some settings replaced (the rest
        inherited)."""
        return type(self)(
            self._parent,
            self._name,
            codec_options or self._codec_options,
            read_preference or self._read_preference,
            write_concern or self._write_concern,
            read_concern or self._read_concern,
            self._timeout_ms if timeout_ms is None else timeout_ms,
        )

    def _write_concern_for(self, session: Any) -> WriteConcern:
        """The write concern a call in ``session`` runs with. Transactions spec: a scope's
        own write concern is ignored in a transaction, even w:0, so the call runs (and shapes
        its result) as acknowledged with the default concern."""
        concern = self._write_concern
        if concern.acknowledged or not getattr(session, "in_transaction", False):
            return concern
        return _DEFAULT_WRITE_CONCERN

    def _read_settings(self) -> dict[str, Any]:
        """The keywords a read operation takes from this scope."""
        return {
            "read_preference": self._read_preference,
            "read_concern": self._read_concern,
            "codec_options": self._codec_options,
        }

    def _write_settings(self, session: Any = None) -> dict[str, Any]:
        """The keywords a write operation in ``session`` takes from this scope."""
        return {
            "write_concern": self._write_concern_for(session),
            "codec_options": self._codec_options,
        }


def adopt_codec_options(given: Any, inherited: CodecOptions) -> CodecOptions:
    """``given`` (asyncmongo's or PyMongo's CodecOptions) for a child scope: PyMongo's is
    converted, and options that say nothing of the value classes keep the parent's, so a
    database or collection of the PyMongo-compatible client still decodes to PyMongo's
    classes when code hands it PyMongo's ``CodecOptions(tz_aware=True)``."""
    try:
        options = as_codec_options(given)
    except TypeError as exc:
        raise InvalidArgument(str(exc)) from None
    if options.value_classes is None and inherited.value_classes is not None:
        options = options.with_options(value_classes=inherited.value_classes)
    return options


def new_id_class(codec_options: CodecOptions) -> Callable[[], Any]:
    """What makes an ``_id`` the driver adds (inserts, GridFS files): the ObjectId class
    documents decode to, so ids made here and ids read back are of one class (PyMongo's
    under the PyMongo-compatible client)."""
    classes = codec_options.value_classes
    return ObjectId if classes is None else _ids_of(classes.object_id, classes.object_id_slot)


@functools.cache
def _ids_of(cls: type, slot: str) -> Callable[[], Any]:
    """New ids of another ObjectId class (PyMongo's) from asyncmongo's generator, built as
    the decoder builds one: ``cls.__new__`` and the 12 bytes in its slot. PyMongo's own
    ``ObjectId()`` costs about 3.4 us an id, this about 1 (``insert_many`` makes one per
    document without an ``_id``)."""
    new: Any = cls.__new__
    store = getattr(cls, slot).__set__
    next_bytes = new_object_id_bytes

    def new_id() -> Any:
        oid = new(cls)
        store(oid, next_bytes())
        return oid

    return new_id
