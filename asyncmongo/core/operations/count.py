"""count_documents (an aggregate, CRUD "Count API") and estimated_document_count (``count``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import ReadConcern
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import (
    Namespace,
    check_document,
    hint_value,
    put,
    put_concerns,
)
from asyncmongo.core.operations.cursors import parse_cursor_page
from asyncmongo.core.operations.replies import check_reply, is_namespace_not_found
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import InvalidArgument

__all__ = ["count_documents", "count_documents_pipeline", "estimated_document_count"]

def count_documents_pipeline(
    filter: Mapping[str, Any], skip: int | None, limit: int | None
) -> list[dict[str, Any]]:
    """``[$match, $skip?, $limit?, $group {_id: 1, n: {$sum: 1}}]`` (CRUD spec)."""
    pipeline: list[dict[str, Any]] = [{"$match": filter}]
    if skip:
        pipeline.append({"$skip": skip})
    if limit:
        pipeline.append({"$limit": limit})
    pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
    return pipeline


def count_documents(
    namespace: Namespace,
    filter: Any,
    *,
    skip: int | None = None,
    limit: int | None = None,
    hint: Any = None,
    collation: Mapping[str, Any] | None = None,
    comment: Any = None,
    max_time_ms: int | None = None,
    read_preference: ReadPreference,
    read_concern: ReadConcern,
    codec_options: CodecOptions,
) -> CommandOperation[int]:
    """The number of documents matching ``filter`` (0 when the aggregate returns nothing)."""
    check_document(filter, "filter")
    for name, value in (("skip", skip), ("limit", limit)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidArgument(f"{name} must be an int, not {value!r}")
    command: dict[str, Any] = {
        "aggregate": namespace.collection,
        "pipeline": count_documents_pipeline(filter, skip, limit),
        "cursor": {},
    }
    put(command, "hint", hint_value(hint))
    put(command, "collation", collation)
    put(command, "comment", comment)
    put(command, "maxTimeMS", max_time_ms)
    put_concerns(command, read_concern)

    def parse(reply: Mapping[str, Any]) -> int:
        documents = parse_cursor_page(reply, namespace).documents
        return int(documents[0]["n"]) if documents else 0

    return CommandOperation(
        namespace.database, command, parse, Target.read(read_preference), codec_options
    )


def estimated_document_count(
    namespace: Namespace,
    *,
    comment: Any = None,
    max_time_ms: int | None = None,
    read_preference: ReadPreference,
    read_concern: ReadConcern,
    codec_options: CodecOptions,
) -> CommandOperation[int]:
    """``count`` with no filter: the collection's metadata count (0 for a missing one)."""
    command: dict[str, Any] = {"count": namespace.collection}
    put(command, "comment", comment)
    put(command, "maxTimeMS", max_time_ms)
    put_concerns(command, read_concern)
    return CommandOperation(
        namespace.database, command, _count, Target.read(read_preference), codec_options
    )


def _count(reply: Mapping[str, Any]) -> int:
    if is_namespace_not_found(reply):
        return 0
    check_reply(reply)
    return int(reply.get("n", 0))
