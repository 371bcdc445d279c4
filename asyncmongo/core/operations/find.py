"""The ``find`` command (CRUD "Find", find_getmore_killcursors_commands).

:class:`FindOptions` is every option of ``Collection.find`` but the filter (PyMongo names; the
CRUD spec's ``find(filter, options)``); ``Find.build`` applies the spec's
limit/batchSize/singleBatch transformations and omits what was not given.
:data:`DEFAULT_FIND_OPTIONS` is the options of ``find(filter)``, shared by every such call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any, Final

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import ReadConcern
from asyncmongo.core.operations.base import Command, ConnectionInfo, Target, with_raw_data
from asyncmongo.core.operations.common import (
    Namespace,
    hint_value,
    sort_document,
)
from asyncmongo.core.operations.cursors import CursorPage, parse_cursor_page
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import InvalidArgument

__all__ = [
    "DEFAULT_FIND_OPTIONS",
    "CursorType",
    "Find",
    "FindContext",
    "FindOne",
    "FindOptions",
    "first_batch_size",
    "projection_document",
]


class CursorType(IntEnum):
    """PyMongo's cursor types (the values are the legacy OP_QUERY flags, as in PyMongo)."""

    NON_TAILABLE = 0
    TAILABLE = 2
    TAILABLE_AWAIT = 34
    EXHAUST = 64


@dataclass(frozen=True, slots=True)
class FindOptions:
    """The options of ``find`` (None: not sent)."""

    projection: Mapping[str, Any] | None = None
    sort: Any = None
    skip: int = 0
    limit: int = 0
    batch_size: int = 0
    hint: Any = None
    collation: Mapping[str, Any] | None = None
    comment: Any = None
    let: Mapping[str, Any] | None = None
    max_time_ms: int | None = None
    max_await_time_ms: int | None = None
    allow_disk_use: bool | None = None
    cursor_type: CursorType = CursorType.NON_TAILABLE
    no_cursor_timeout: bool | None = None
    allow_partial_results: bool | None = None
    return_key: bool | None = None
    show_record_id: bool | None = None
    max: Mapping[str, Any] | None = None
    min: Mapping[str, Any] | None = None
    single_batch: bool = False
    raw_data: bool | None = None

    def __post_init__(self) -> None:
        if (  # the usual options: nothing to check
            type(self.skip) is int
            and type(self.limit) is int
            and type(self.batch_size) is int
            and self.skip >= 0
            and self.batch_size >= 0
            and self.max_time_ms is None
            and self.max_await_time_ms is None
            and self.cursor_type is CursorType.NON_TAILABLE
        ):
            return
        for name in ("skip", "limit", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgument(f"{name} must be an int, not {value!r}")
        if self.skip < 0:
            raise InvalidArgument(f"skip must be >= 0, not {self.skip}")
        if self.batch_size < 0:
            raise InvalidArgument(f"batch_size must be >= 0, not {self.batch_size}")
        for name in ("max_time_ms", "max_await_time_ms"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InvalidArgument(f"{name} must be a non-negative int, not {value!r}")
        if type(self.cursor_type) is not CursorType:
            try:
                object.__setattr__(self, "cursor_type", CursorType(self.cursor_type))
            except ValueError:
                raise InvalidArgument(f"not a CursorType: {self.cursor_type!r}") from None
        if self.cursor_type is CursorType.EXHAUST:
            raise InvalidArgument("exhaust cursors are not supported (OP_MSG exhaust of find)")

    def with_changes(self, **changes: Any) -> FindOptions:
        return replace(self, **changes)

    @property
    def tailable(self) -> bool:
        return bool(self.cursor_type & CursorType.TAILABLE)

    @property
    def await_data(self) -> bool:
        return self.cursor_type is CursorType.TAILABLE_AWAIT


#: ``find(filter)``'s options: none given (immutable, so every such cursor shares it).
DEFAULT_FIND_OPTIONS: Final = FindOptions()


def projection_document(projection: Any) -> Mapping[str, Any] | None:
    """PyMongo also accepts a list of field names: ``["a", "b"]`` means ``{a: 1, b: 1}``."""
    if projection is None or isinstance(projection, Mapping):
        return projection
    if isinstance(projection, list | tuple) and all(isinstance(f, str) for f in projection):
        return dict.fromkeys(projection, 1)
    raise InvalidArgument(f"projection must be a mapping or a list of names, not {projection!r}")


def first_batch_size(limit: int, batch_size: int) -> tuple[int, int, bool]:
    """(limit, batchSize, singleBatch) per find_getmore_killcursors and CRUD's limit+1 rule."""
    single_batch = limit < 0
    limit = abs(limit)
    if single_batch:
        batch_size = limit if limit else batch_size
    elif limit and batch_size == limit:
        batch_size = limit + 1  # CRUD: avoid a cursor left open when both are equal
    return limit, batch_size, single_batch


class FindContext:
    """What every ``find`` and ``find_one`` through one collection object shares: its
    namespace, where it may run, its read concern and codec options, computed once per
    collection (its settings never change) instead of once per call."""

    __slots__ = ("codec_options", "collection", "database", "namespace", "read_concern", "target")

    def __init__(
        self,
        namespace: Namespace,
        read_preference: ReadPreference,
        read_concern: ReadConcern | None,
        codec_options: CodecOptions,
    ) -> None:
        self.namespace = namespace
        self.database = namespace.database
        self.collection = namespace.collection
        self.target = Target.read(read_preference)
        #: None when it is the server's default (not sent).
        self.read_concern = (
            None if read_concern is None or read_concern.is_server_default else read_concern
        )
        self.codec_options = codec_options


class Find:
    """``find(filter, options)`` on the collection of ``context``; ``parse`` gives the first
    :class:`CursorPage`. ``filter`` is a mapping or None (the API checked it)."""

    __slots__ = ("codec_options", "context", "filter", "options", "target")

    name = "find"

    def __init__(
        self,
        context: FindContext,
        filter: Mapping[str, Any] | None,
        options: FindOptions = DEFAULT_FIND_OPTIONS,
    ) -> None:
        self.context = context
        self.filter = filter
        self.options = options
        self.target = context.target
        self.codec_options = context.codec_options

    def build(self, conn: ConnectionInfo) -> Command:
        context = self.context
        o = self.options
        command: dict[str, Any] = {"find": context.collection}
        command["filter"] = self.filter if self.filter is not None else {}
        if o is DEFAULT_FIND_OPTIONS:  # find(filter): nothing else to send
            if context.read_concern is not None:
                command["readConcern"] = context.read_concern.document
            return Command(context.database, command)
        # plain ifs rather than put(): this runs for every find with options
        if o.sort is not None:
            command["sort"] = sort_document(o.sort)
        if o.projection is not None:
            command["projection"] = o.projection
        if o.hint is not None:
            command["hint"] = hint_value(o.hint)
        if o.skip:
            command["skip"] = o.skip
        limit, batch_size, single_batch = first_batch_size(o.limit, o.batch_size)
        if limit:
            command["limit"] = limit
        if batch_size:
            command["batchSize"] = batch_size
        if single_batch or o.single_batch:
            command["singleBatch"] = True
        if o.comment is not None:
            command["comment"] = o.comment
        if o.max_time_ms is not None:
            command["maxTimeMS"] = o.max_time_ms
        if context.read_concern is not None:
            command["readConcern"] = context.read_concern.document
        if o.max is not None:
            command["max"] = o.max
        if o.min is not None:
            command["min"] = o.min
        if o.return_key is not None:
            command["returnKey"] = o.return_key
        if o.show_record_id is not None:
            command["showRecordId"] = o.show_record_id
        if o.cursor_type is not CursorType.NON_TAILABLE:
            if o.tailable:
                command["tailable"] = True
            if o.await_data:
                command["awaitData"] = True
        if o.no_cursor_timeout is not None:
            command["noCursorTimeout"] = o.no_cursor_timeout
        if o.allow_partial_results is not None:
            command["allowPartialResults"] = o.allow_partial_results
        if o.collation is not None:
            command["collation"] = o.collation
        if o.allow_disk_use is not None:
            command["allowDiskUse"] = o.allow_disk_use
        if o.let is not None:
            command["let"] = o.let
        if o.raw_data is not None:
            command = with_raw_data(command, o.raw_data, conn)
        return Command(context.database, command)

    def parse(self, reply: Mapping[str, Any]) -> CursorPage:
        return parse_cursor_page(reply, self.context.namespace)


class FindOne:
    """``find_one(filter)`` without other options: CRUD findOne's ``find`` (limit 1 and
    singleBatch, no batchSize), the command ``Find`` builds for those options.

    ``filter`` must be a mapping or None (``find_one`` has turned anything else into
    ``{_id: filter}``). ``parse`` returns the first batch itself, a list, when the server
    closed the cursor (always, with limit 1 and singleBatch): all ``find_one`` needs, and no
    page for the executor to track or name a server in. A server that kept a cursor open
    anyway gets the whole :class:`CursorPage`, which ``find_one`` closes.
    """

    __slots__ = ("codec_options", "context", "filter", "target")

    name = "find"

    def __init__(self, context: FindContext, filter: Mapping[str, Any] | None) -> None:
        self.context = context
        self.filter = filter
        self.target = context.target
        self.codec_options = context.codec_options

    def build(self, conn: ConnectionInfo) -> Command:
        context = self.context
        filter = self.filter
        command: dict[str, Any] = {
            "find": context.collection,
            "filter": filter if filter is not None else {},
            "limit": 1,
            "singleBatch": True,
        }
        if context.read_concern is not None:
            command["readConcern"] = context.read_concern.document
        return Command(context.database, command)

    def parse(self, reply: Mapping[str, Any]) -> list[Any] | CursorPage:
        cursor = reply.get("cursor")
        if reply.get("ok") == 1 and cursor.__class__ is dict:  # (is_ok, inline)
            batch = cursor.get("firstBatch")
            cursor_id = cursor.get("id", 0)
            if batch.__class__ is list and not cursor_id and isinstance(cursor_id, int):
                return batch  # the usual reply: a closed cursor's first batch
        # anything else: its error, a cursor left open or an odd but valid reply
        page = parse_cursor_page(reply, self.context.namespace)
        return page if page.cursor_id else page.documents
