"""Keyword arguments of the collection methods: PyMongo's camelCase aliases, the allowed
option sets per command, and ``rawData``.

PyMongo takes many command options in ``**kwargs``; a typo there must raise rather than be
silently ignored, so every method names the options it allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.errors import InvalidArgument

__all__ = [
    "AGGREGATE_OPTIONS",
    "COUNT_OPTIONS",
    "FAM_OPTIONS",
    "MAX_TIME",
    "RAW",
    "command_options",
    "snake",
    "with_raw_data",
]

_T = TypeVar("_T")

#: PyMongo passes some options under the server's camelCase names in ``**kwargs``.
ALIASES = {
    "maxTimeMS": "max_time_ms",
    "batchSize": "batch_size",
    "allowDiskUse": "allow_disk_use",
    "bypassDocumentValidation": "bypass_document_validation",
    "arrayFilters": "array_filters",
    "maxAwaitTimeMS": "max_await_time_ms",
    "commitQuorum": "commit_quorum",
    "rawData": "raw_data",
}


def command_options(
    kwargs: Mapping[str, Any], allowed: frozenset[str], what: str
) -> tuple[dict[str, Any], bool | None]:
    """The command's options from ``kwargs`` (see snake), and ``raw_data`` apart."""
    options = snake(kwargs, allowed, what)
    return options, options.pop("raw_data", None)


def snake(kwargs: Mapping[str, Any], allowed: frozenset[str], what: str) -> dict[str, Any]:
    """Normalise camelCase aliases and refuse unknown keywords (a typo must not be ignored)."""
    result: dict[str, Any] = {}
    for key, value in kwargs.items():
        name = ALIASES.get(key, key)
        if name not in allowed:
            raise InvalidArgument(f"{what}() got an unexpected keyword argument {key!r}")
        result[name] = value
    return result


def with_raw_data(op: CommandOperation[_T], raw_data: bool | None) -> CommandOperation[_T]:
    """Attach ``rawData`` (sent only to 8.2+ servers; CRUD says to discourage its use, so it
    is an undocumented keyword here)."""
    if raw_data is not None:
        op.raw_data = raw_data
    return op


RAW = frozenset({"raw_data"})
MAX_TIME = RAW | {"max_time_ms"}
COUNT_OPTIONS = MAX_TIME | {"skip", "limit", "collation", "hint"}
FAM_OPTIONS = RAW | {
    "collation",
    "max_time_ms",
    "bypass_document_validation",
    "array_filters",
    "upsert",
}
AGGREGATE_OPTIONS = RAW | frozenset(
    {
        "allow_disk_use",
        "max_time_ms",
        "batch_size",
        "collation",
        "hint",
        "bypass_document_validation",
        "max_await_time_ms",
    }
)
