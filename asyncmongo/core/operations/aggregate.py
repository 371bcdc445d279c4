"""``aggregate`` on a collection or a database (CRUD "Aggregate").

A pipeline ending in ``$out`` or ``$merge`` writes: it takes the write concern, and its
read preference is subject to CRUD's rule (a secondary only if every server is 5.0+), which
the executor applies from ``Target.write_stage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import Namespace, hint_value, put, put_concerns
from asyncmongo.core.operations.cursors import CursorPage, parse_cursor_page
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import InvalidArgument

__all__ = ["aggregate", "has_write_stage"]


def has_write_stage(pipeline: Sequence[Mapping[str, Any]]) -> bool:
    """True when the last stage is ``$out`` or ``$merge``."""
    if not pipeline:
        return False
    last = pipeline[-1]
    return isinstance(last, Mapping) and bool(last) and next(iter(last)) in ("$out", "$merge")


def aggregate(
    namespace: Namespace,
    pipeline: Any,
    *,
    database_level: bool = False,
    batch_size: int | None = None,
    allow_disk_use: bool | None = None,
    bypass_document_validation: bool | None = None,
    collation: Mapping[str, Any] | None = None,
    comment: Any = None,
    hint: Any = None,
    let: Mapping[str, Any] | None = None,
    max_time_ms: int | None = None,
    read_preference: ReadPreference,
    read_concern: ReadConcern,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[CursorPage]:
    """The operation; its result is the first :class:`CursorPage`."""
    if not isinstance(pipeline, list) or not all(isinstance(s, Mapping) for s in pipeline):
        raise InvalidArgument("pipeline must be a list of stage documents")
    writes = has_write_stage(pipeline)
    command: dict[str, Any] = {
        "aggregate": 1 if database_level else namespace.collection,
        "pipeline": pipeline,
    }
    cursor: dict[str, Any] = {}
    if batch_size is not None and not writes:
        cursor["batchSize"] = batch_size  # CRUD: batchSize 0 is sent; $out/$merge omit it
    command["cursor"] = cursor
    put(command, "allowDiskUse", allow_disk_use)
    put(command, "bypassDocumentValidation", bypass_document_validation)
    put(command, "collation", collation)
    put(command, "comment", comment)
    put(command, "hint", hint_value(hint))
    put(command, "let", let)
    put(command, "maxTimeMS", max_time_ms)
    put_concerns(command, read_concern, write_concern if writes else None)
    target = Target.read(read_preference)
    if writes:
        target = replace(target, write_stage=True)

    def parse(reply: Mapping[str, Any]) -> CursorPage:
        return parse_cursor_page(reply, namespace)

    return CommandOperation(namespace.database, command, parse, target, codec_options)
