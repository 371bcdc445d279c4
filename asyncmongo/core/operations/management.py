"""Database and collection management: listDatabases, listCollections, create, drop,
dropDatabase, renameCollection (specs/enumerate-databases, enumerate-collections)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation, write_command
from asyncmongo.core.operations.common import Namespace, check_document, put
from asyncmongo.core.operations.cursors import CursorPage, parse_cursor_page
from asyncmongo.core.operations.replies import check_write_command_reply, is_namespace_not_found
from asyncmongo.core.selection import ReadPreference

__all__ = [
    "create_collection",
    "drop_collection",
    "drop_database",
    "list_collections",
    "list_databases",
    "rename_collection",
]

def list_databases(
    *,
    filter: Mapping[str, Any] | None = None,
    name_only: bool | None = None,
    authorized_databases: bool | None = None,
    comment: Any = None,
    read_preference: ReadPreference,
    codec_options: CodecOptions,
) -> CommandOperation[list[Any]]:
    """listDatabases on admin; the result is the ``databases`` array."""
    command: dict[str, Any] = {"listDatabases": 1}
    if filter is not None:
        command["filter"] = check_document(filter, "filter")
    put(command, "nameOnly", name_only)
    put(command, "authorizedDatabases", authorized_databases)
    put(command, "comment", comment)

    def parse(reply: Mapping[str, Any]) -> list[Any]:
        check_write_command_reply(reply)
        databases = reply.get("databases", [])
        return list(databases) if isinstance(databases, list) else []

    return CommandOperation("admin", command, parse, Target.read(read_preference), codec_options)


def list_collections(
    database: str,
    *,
    filter: Mapping[str, Any] | None = None,
    name_only: bool | None = None,
    authorized_collections: bool | None = None,
    batch_size: int | None = None,
    comment: Any = None,
    read_preference: ReadPreference,
    codec_options: CodecOptions,
) -> CommandOperation[CursorPage]:
    """listCollections; the result is the first page of its cursor."""
    cursor: dict[str, Any] = {}
    put(cursor, "batchSize", batch_size)
    command: dict[str, Any] = {"listCollections": 1, "cursor": cursor}
    if filter is not None:
        command["filter"] = check_document(filter, "filter")
    put(command, "nameOnly", name_only)
    put(command, "authorizedCollections", authorized_collections)
    put(command, "comment", comment)
    namespace = Namespace(database, "$cmd.listCollections")

    def parse(reply: Mapping[str, Any]) -> CursorPage:
        return parse_cursor_page(reply, namespace)

    return CommandOperation(database, command, parse, Target.read(read_preference), codec_options)


def _dropped(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """drop's reply: a collection that does not exist counts as dropped."""
    return reply if is_namespace_not_found(reply) else check_write_command_reply(reply)


def create_collection(
    namespace: Namespace,
    options: Mapping[str, Any],
    *,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[Mapping[str, Any]]:
    """create with the server's option names (capped, size, validator, timeseries, ...)."""
    command: dict[str, Any] = {"create": namespace.collection, **options}
    return write_command(
        namespace.database, command, check_write_command_reply, write_concern, codec_options
    )


def drop_collection(
    namespace: Namespace,
    *,
    comment: Any = None,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[Mapping[str, Any]]:
    """drop; a collection that does not exist is not an error (PyMongo, CRUD)."""
    command: dict[str, Any] = {"drop": namespace.collection}
    put(command, "comment", comment)
    return write_command(namespace.database, command, _dropped, write_concern, codec_options)


def drop_database(
    database: str,
    *,
    comment: Any = None,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[Mapping[str, Any]]:
    command: dict[str, Any] = {"dropDatabase": 1}
    put(command, "comment", comment)
    return write_command(database, command, check_write_command_reply, write_concern, codec_options)


def rename_collection(
    source: Namespace,
    target: Namespace,
    *,
    drop_target: bool | None = None,
    comment: Any = None,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[Mapping[str, Any]]:
    """renameCollection runs on admin with full namespaces."""
    command: dict[str, Any] = {"renameCollection": source.full_name, "to": target.full_name}
    put(command, "dropTarget", drop_target)
    put(command, "comment", comment)
    return write_command("admin", command, check_write_command_reply, write_concern, codec_options)
