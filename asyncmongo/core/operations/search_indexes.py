"""Atlas search index management (specs/index-management "Search Indexes").

createSearchIndexes, updateSearchIndex and dropSearchIndex are plain commands that MUST NOT
carry a read or write concern (Atlas refuses them); listing is an aggregate with
``$listSearchIndexes`` (``asyncmongo.core.operations.aggregate``). dropSearchIndex of a
missing index or collection (NamespaceNotFound) succeeds, so drops are idempotent; like
PyMongo, updateSearchIndex on a missing collection succeeds too.

The spec's option structs are empty ("future proof"); PyMongo passes any keyword arguments
into the command under their server names (``maxTimeMS``), and so do these builders
(``options``), refusing only a field that would replace one the command is made of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import Namespace, check_document, put
from asyncmongo.core.operations.replies import check_reply, is_namespace_not_found
from asyncmongo.errors import InvalidArgument

__all__ = [
    "create_search_indexes",
    "drop_search_index",
    "list_search_indexes_pipeline",
    "search_index_document",
    "update_search_index",
]


def search_index_document(
    definition: Mapping[str, Any], name: str | None = None, type: str | None = None
) -> dict[str, Any]:
    """One ``indexes`` entry of createSearchIndexes: ``{name?, type?, definition}``."""
    check_document(definition, "definition")
    document: dict[str, Any] = {}
    put(document, "name", name)
    put(document, "type", type)
    document["definition"] = definition
    return document


def create_search_indexes(
    namespace: Namespace,
    indexes: Sequence[Mapping[str, Any]],
    *,
    comment: Any = None,
    options: Mapping[str, Any] | None = None,
    codec_options: CodecOptions,
) -> CommandOperation[list[str]]:
    """createSearchIndexes; the result is the created indexes' names, in order (an empty list
    is the server's to refuse, as the spec's tests expect)."""
    command: dict[str, Any] = {
        "createSearchIndexes": namespace.collection,
        "indexes": list(indexes),
    }
    _add_options(command, comment, options)

    def parse(reply: Mapping[str, Any]) -> list[str]:
        check_reply(reply)
        return [str(index.get("name")) for index in reply.get("indexesCreated") or []]

    return CommandOperation(namespace.database, command, parse, Target.write(), codec_options)


def update_search_index(
    namespace: Namespace,
    name: str,
    definition: Mapping[str, Any],
    *,
    comment: Any = None,
    options: Mapping[str, Any] | None = None,
    codec_options: CodecOptions,
) -> CommandOperation[None]:
    """updateSearchIndex: replace the named index's definition (NamespaceNotFound is
    success, as in PyMongo)."""
    command: dict[str, Any] = {
        "updateSearchIndex": namespace.collection,
        "name": name,
        "definition": check_document(definition, "definition"),
    }
    _add_options(command, comment, options)
    return CommandOperation(
        namespace.database, command, _checked_unless_missing, Target.write(), codec_options
    )


def drop_search_index(
    namespace: Namespace,
    name: str,
    *,
    comment: Any = None,
    options: Mapping[str, Any] | None = None,
    codec_options: CodecOptions,
) -> CommandOperation[None]:
    """dropSearchIndex; NamespaceNotFound is success (the spec: drops are idempotent)."""
    command: dict[str, Any] = {"dropSearchIndex": namespace.collection, "name": name}
    _add_options(command, comment, options)
    return CommandOperation(
        namespace.database, command, _checked_unless_missing, Target.write(), codec_options
    )


def list_search_indexes_pipeline(name: str | None) -> list[dict[str, Any]]:
    """``[{$listSearchIndexes: {name?}}]``."""
    return [{"$listSearchIndexes": {"name": name} if name is not None else {}}]


def _add_options(
    command: dict[str, Any], comment: Any, options: Mapping[str, Any] | None
) -> None:
    """``comment`` and the caller's extra fields, which may not replace the command's own
    (a misplaced ``name=`` must not silently rename the index)."""
    put(command, "comment", comment)
    for key, value in (options or {}).items():
        if not isinstance(key, str) or key in command:
            raise InvalidArgument(f"{next(iter(command))} option {key!r} is not allowed: the "
                                  "command sets it")
        command[key] = value


def _checked_unless_missing(reply: Mapping[str, Any]) -> None:
    """NamespaceNotFound: the collection does not exist, which these commands ignore."""
    if not is_namespace_not_found(reply):
        check_reply(reply)
