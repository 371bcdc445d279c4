"""Index management (specs/index-management): createIndexes, listIndexes, dropIndexes.

An index model becomes ``{key: {...}, name: ..., <options>}``; without a name the spec's
generated one is used (``a_1_b_-1``). PyMongo's option names are snake_case in a few places
(``expire_after_seconds`` style is NOT PyMongo: PyMongo passes server names through), so
options are sent as given, except the few PyMongo renames (``bucket_size``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation, write_command
from asyncmongo.core.operations.common import Namespace, index_keys, index_name, put
from asyncmongo.core.operations.cursors import CursorPage, parse_cursor_page
from asyncmongo.core.operations.replies import check_write_command_reply, is_namespace_not_found
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import InvalidArgument

__all__ = ["create_indexes", "drop_indexes", "index_document", "list_indexes"]

_RENAMES = {"bucket_size": "bucketSize"}


def index_document(keys: Any, **options: Any) -> dict[str, Any]:
    """The createIndexes ``indexes`` entry of one index model."""
    pairs = index_keys(keys, "index key")
    document: dict[str, Any] = {"key": dict(pairs)}
    name = options.pop("name", None)
    if name is not None and not isinstance(name, str):
        raise InvalidArgument(f"an index name must be a str, not {name!r}")
    document["name"] = name if name is not None else index_name(pairs)
    for option, value in options.items():
        document[_RENAMES.get(option, option)] = value
    return document


def create_indexes(
    namespace: Namespace,
    indexes: Sequence[Mapping[str, Any]],
    *,
    commit_quorum: Any = None,
    comment: Any = None,
    max_time_ms: int | None = None,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[list[str]]:
    """createIndexes; the result is the list of index names, in the order given."""
    if not indexes:
        raise InvalidArgument("create_indexes needs at least one index")
    names = [str(index["name"]) for index in indexes]
    command: dict[str, Any] = {"createIndexes": namespace.collection, "indexes": list(indexes)}
    put(command, "commitQuorum", commit_quorum)
    put(command, "comment", comment)
    put(command, "maxTimeMS", max_time_ms)

    def parse(reply: Mapping[str, Any]) -> list[str]:
        check_write_command_reply(reply)
        return names

    return write_command(namespace.database, command, parse, write_concern, codec_options)


def drop_indexes(
    namespace: Namespace,
    index: str | Mapping[str, Any] | list[str],
    *,
    comment: Any = None,
    max_time_ms: int | None = None,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[Mapping[str, Any]]:
    """dropIndexes of one index (by name or key pattern) or ``"*"`` for all but ``_id_``;
    a collection that does not exist has no index to drop (NamespaceNotFound is success, as
    in PyMongo; a missing index of an existing collection still fails)."""
    command: dict[str, Any] = {"dropIndexes": namespace.collection, "index": index}
    put(command, "comment", comment)
    put(command, "maxTimeMS", max_time_ms)
    return write_command(namespace.database, command, _dropped, write_concern, codec_options)


def _dropped(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    return reply if is_namespace_not_found(reply) else check_write_command_reply(reply)


def list_indexes(
    namespace: Namespace,
    *,
    batch_size: int | None = None,
    comment: Any = None,
    read_preference: ReadPreference,
    codec_options: CodecOptions,
) -> CommandOperation[CursorPage]:
    """listIndexes; a collection that does not exist has no indexes (an empty cursor)."""
    cursor: dict[str, Any] = {}
    put(cursor, "batchSize", batch_size)
    command: dict[str, Any] = {"listIndexes": namespace.collection, "cursor": cursor}
    put(command, "comment", comment)

    def parse(reply: Mapping[str, Any]) -> CursorPage:
        if is_namespace_not_found(reply):
            return CursorPage(0, namespace, [])
        return parse_cursor_page(reply, namespace)

    return CommandOperation(
        namespace.database, command, parse, Target.read(read_preference), codec_options
    )
