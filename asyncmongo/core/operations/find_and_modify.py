"""``findAndModify``: find_one_and_update / find_one_and_replace / find_one_and_delete."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.command import CommandOperation, write_command
from asyncmongo.core.operations.common import (
    Namespace,
    check_document,
    hint_value,
    put,
    sort_document,
)
from asyncmongo.core.operations.replies import check_write_command_reply
from asyncmongo.core.operations.statements import check_replacement, check_update
from asyncmongo.errors import InvalidArgument

__all__ = ["ReturnDocument", "find_and_modify"]


class ReturnDocument(Enum):
    """Which version of the document find_one_and_update/replace returns (PyMongo's values)."""

    BEFORE = False
    AFTER = True


def find_and_modify(
    namespace: Namespace,
    filter: Any,
    *,
    update: Any = None,
    replacement: Any = None,
    remove: bool = False,
    projection: Mapping[str, Any] | None = None,
    sort: Any = None,
    upsert: bool | None = None,
    return_document: ReturnDocument | bool = ReturnDocument.BEFORE,
    array_filters: list[Any] | None = None,
    hint: Any = None,
    collation: Mapping[str, Any] | None = None,
    let: Mapping[str, Any] | None = None,
    comment: Any = None,
    max_time_ms: int | None = None,
    bypass_document_validation: bool | None = None,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[Any]:
    """The operation; its result is the document (before or after) or None."""
    check_document(filter, "filter")
    command: dict[str, Any] = {"findAndModify": namespace.collection, "query": filter}
    put(command, "fields", projection)
    put(command, "sort", sort_document(sort))
    if remove:
        command["remove"] = True
    else:
        command["update"] = (
            check_replacement(replacement) if update is None else check_update(update)
        )
        if isinstance(return_document, ReturnDocument):
            return_document = return_document.value
        if not isinstance(return_document, bool):
            raise InvalidArgument("return_document must be ReturnDocument.BEFORE or AFTER")
        if return_document:
            command["new"] = True
        put(command, "upsert", upsert)
        put(command, "arrayFilters", array_filters)
        put(command, "bypassDocumentValidation", bypass_document_validation)
    put(command, "hint", hint_value(hint))
    put(command, "collation", collation)
    put(command, "let", let)
    put(command, "comment", comment)
    put(command, "maxTimeMS", max_time_ms)
    return write_command(namespace.database, command, _value, write_concern, codec_options)


def _value(reply: Mapping[str, Any]) -> Any:
    return check_write_command_reply(reply).get("value")
