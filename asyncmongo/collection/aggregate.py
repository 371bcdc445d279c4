"""Aggregation, shared by AsyncCollection.aggregate and AsyncDatabase.aggregate.

The two differ only in the namespace (``$cmd.aggregate`` for a database) and whose settings
apply, so one function builds the operation, runs it and wraps the first page in a cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from asyncmongo._scope import ClientScope
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.collection.arguments import AGGREGATE_OPTIONS, command_options, with_raw_data
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import aggregate as aggregate_ops
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.selection import ReadPreference
from asyncmongo.cursor import AsyncCommandCursor, open_command_cursor

__all__ = ["AggregateOwner", "aggregate_cursor"]


class _HasClient(Protocol):
    @property
    def client(self) -> ClientScope: ...


class AggregateOwner(Protocol):
    """A collection or a database: whose settings an aggregate takes."""

    @property
    def database(self) -> _HasClient: ...

    @property
    def read_preference(self) -> ReadPreference: ...

    @property
    def read_concern(self) -> ReadConcern: ...

    @property
    def codec_options(self) -> CodecOptions: ...

    @property
    def timeout_ms(self) -> int | None: ...

    def _write_concern_for(self, session: Any) -> WriteConcern: ...


async def aggregate_cursor(
    owner: AggregateOwner,
    namespace: Namespace,
    database_level: bool,
    pipeline: Any,
    let: Mapping[str, Any] | None,
    comment: Any,
    kwargs: Mapping[str, Any],
    session: Any = None,
) -> AsyncCommandCursor[Any]:
    """Run ``aggregate`` for a collection or a database (``owner``'s settings) and wrap the
    first page in a command cursor; collection and database aggregate share this."""
    kwargs = dict(kwargs)
    timeout_mode = kwargs.pop("timeout_mode", None)
    options, raw_data = command_options(kwargs, AGGREGATE_OPTIONS, "aggregate")
    max_await_time_ms = options.pop("max_await_time_ms", None)
    op = aggregate_ops.aggregate(
        namespace,
        pipeline,
        database_level=database_level,
        let=let,
        comment=comment,
        read_preference=owner.read_preference,
        read_concern=owner.read_concern,
        write_concern=owner._write_concern_for(session),
        codec_options=owner.codec_options,
        **options,
    )
    client = owner.database.client  # a database's ``database`` is itself
    return await open_command_cursor(
        client,
        with_raw_data(op, raw_data),
        session,
        owner.codec_options,
        timeout_ms=owner.timeout_ms,
        timeout_mode=timeout_mode,
        batch_size=options.get("batch_size") or 0,
        comment=comment,
        max_await_time_ms=max_await_time_ms,
    )
