"""Atlas search index commands on a mongod without Atlas Search, as mongod 8.0 answers them.

createSearchIndexes, updateSearchIndex, dropSearchIndex and the ``$listSearchIndexes`` stage
are proxied by mongod to a search index management process (mongot) that only Atlas (or an
AtlasCLI local deployment) configures. Without one, mongod parses the command (its IDL: the
collection name, the required fields and their types), then refuses it with 31082
SearchNotEnabled before it looks the collection up, so the answer is the same whether the
collection exists or not. The stage is refused while the pipeline is parsed.

The simulator plays that non-Atlas mongod: the driver's search index helpers are tested
against it for the commands they send and the error they surface (index-management suite).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from asyncmongo.testing.store.context import CommandContext, collection_name
from asyncmongo.testing.store.errors import StoreError

__all__ = [
    "SEARCH_NOT_ENABLED",
    "STAGE",
    "create_search_indexes",
    "drop_search_index",
    "list_search_indexes_stage",
    "update_search_index",
]

#: ErrorCodes::SearchNotEnabled.
SEARCH_NOT_ENABLED = 31082
STAGE = "$listSearchIndexes"

#: mongod 8.0's message (throwIfNotRunningWithRemoteSearchIndexManagement).
_NOT_ENABLED_MESSAGE = (
    "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage "
    "requires additional configuration. Please connect to Atlas or an AtlasCLI local "
    "deployment to enable. For more information on how to connect, see "
    "https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs"
)

_TYPE_NAMES = {bool: "bool", int: "int", float: "double", str: "string", list: "array"}


def create_search_indexes(ctx: CommandContext, command: Mapping[str, Any]) -> dict[str, Any]:
    """createSearchIndexes: ``indexes`` (an array of objects) is required."""
    collection_name(command, "createSearchIndexes", ctx.db_name)
    indexes = _required(command, "createSearchIndexes", "indexes", list, "array")
    for index in indexes:
        if not isinstance(index, Mapping):
            raise _wrong_type("createSearchIndexes.indexes", index, "object")
    _not_enabled()


def update_search_index(ctx: CommandContext, command: Mapping[str, Any]) -> dict[str, Any]:
    """updateSearchIndex: ``definition`` (an object) is required, ``name`` a string."""
    collection_name(command, "updateSearchIndex", ctx.db_name)
    _optional_string(command, "updateSearchIndex", "name")
    _required(command, "updateSearchIndex", "definition", Mapping, "object")
    _not_enabled()


def drop_search_index(ctx: CommandContext, command: Mapping[str, Any]) -> dict[str, Any]:
    """dropSearchIndex: ``name`` is a string."""
    collection_name(command, "dropSearchIndex", ctx.db_name)
    _optional_string(command, "dropSearchIndex", "name")
    _not_enabled()


def list_search_indexes_stage(argument: Any) -> NoReturn:
    """``$listSearchIndexes``: refused while the pipeline is parsed (an object argument)."""
    if not isinstance(argument, Mapping):
        raise StoreError(9, "The $listSearchIndexes stage specification must be an object. "
                            f"Found: {_type_name(argument)}")
    _optional_string(argument, STAGE, "name")
    _not_enabled()


def _not_enabled() -> NoReturn:
    raise StoreError(SEARCH_NOT_ENABLED, _NOT_ENABLED_MESSAGE)


def _required(command: Mapping[str, Any], owner: str, field: str, kind: type,
              kind_name: str) -> Any:
    if field not in command:
        raise StoreError(40414, f"BSON field '{owner}.{field}' is missing but a required field")
    value = command[field]
    if not isinstance(value, kind):
        raise _wrong_type(f"{owner}.{field}", value, kind_name)
    return value


def _optional_string(command: Mapping[str, Any], owner: str, field: str) -> None:
    value = command.get(field)
    if value is not None and not isinstance(value, str):
        raise _wrong_type(f"{owner}.{field}", value, "string")


def _wrong_type(path: str, value: Any, expected: str) -> StoreError:
    return StoreError(14, f"BSON field '{path}' is the wrong type '{_type_name(value)}', "
                          f"expected type '{expected}'")


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    return _TYPE_NAMES.get(type(value), type(value).__name__)
