"""``distinct``: the distinct values of one field."""

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
from asyncmongo.core.operations.replies import check_reply
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import InvalidArgument

__all__ = ["distinct"]


def distinct(
    namespace: Namespace,
    key: str,
    filter: Any = None,
    *,
    collation: Mapping[str, Any] | None = None,
    comment: Any = None,
    hint: Any = None,
    max_time_ms: int | None = None,
    read_preference: ReadPreference,
    read_concern: ReadConcern,
    codec_options: CodecOptions,
) -> CommandOperation[list[Any]]:
    if not isinstance(key, str):
        raise InvalidArgument(f"key must be a str, not {type(key).__name__}")
    command: dict[str, Any] = {"distinct": namespace.collection, "key": key}
    if filter is not None:
        command["query"] = check_document(filter, "filter")
    put(command, "collation", collation)
    put(command, "comment", comment)
    put(command, "hint", hint_value(hint))
    put(command, "maxTimeMS", max_time_ms)
    put_concerns(command, read_concern)
    return CommandOperation(
        namespace.database, command, _values, Target.read(read_preference), codec_options
    )


def _values(reply: Mapping[str, Any]) -> list[Any]:
    check_reply(reply)
    values = reply.get("values", [])
    return list(values) if isinstance(values, list) else []
