"""AsyncCollection's index management: regular indexes and Atlas search indexes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from asyncmongo._adopt import adopt_index_model, adopt_search_index_model
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.collection.aggregate import aggregate_cursor
from asyncmongo.collection.arguments import (
    MAX_TIME,
    command_options,
    with_raw_data,
)
from asyncmongo.collection.base import CollectionBase
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import indexes as index_ops
from asyncmongo.core.operations import search_indexes as search_ops
from asyncmongo.core.operations.common import (
    check_document,
    index_keys,
    index_name,
)
from asyncmongo.core.selection import PRIMARY
from asyncmongo.cursor import AsyncCommandCursor, open_command_cursor
from asyncmongo.errors import InvalidArgument
from asyncmongo.operations import IndexModel, SearchIndexModel

__all__ = ["CollectionIndexes"]


class CollectionIndexes(CollectionBase[_DocumentType]):
    """The index methods of :class:`~asyncmongo.collection.AsyncCollection`."""

    __slots__ = ()

    async def create_index(
        self, keys: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> str:
        """Create one index; returns its name (generated as ``a_1_b_-1`` if not given)."""
        command_options = (
            "commitQuorum",
            "maxTimeMS",
            "commit_quorum",
            "max_time_ms",
            "raw_data",
            "rawData",
        )
        options = {k: v for k, v in kwargs.items() if k not in command_options}
        model = IndexModel(keys, **options)
        names = await self.create_indexes(
            [model],
            session=session,
            comment=comment,
            **{k: v for k, v in kwargs.items() if k in command_options},
        )
        return names[0]

    async def create_indexes(
        self, indexes: Sequence[IndexModel], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """Create several indexes in one createIndexes command; returns their names in the order
        given.

        Each entry is an IndexModel (keys plus options such as ``name``, ``unique``,
        ``partialFilterExpression``; a name is generated from the keys when none is given).
        ``commit_quorum`` (also ``commitQuorum``) and ``max_time_ms`` are the command's options, any
        other keyword raises InvalidArgument, as do an empty list or an entry that is not an
        IndexModel. Creating an index that exists with the same keys and options does nothing; one
        with the same name or keys and other options raises OperationFailure. Uses the collection's
        write concern.
        """
        allowed = MAX_TIME | {"commit_quorum"}
        options, raw_data = command_options(kwargs, allowed, "create_indexes")
        documents = []
        for index in indexes:
            index = adopt_index_model(index)
            if not isinstance(index, IndexModel):
                raise InvalidArgument(f"{index!r} is not an IndexModel")
            documents.append(index.document)
        settings = self._write_settings(session)
        op = index_ops.create_indexes(
            self._namespace, documents, comment=comment, **settings, **options
        )
        return await self._run(op, session, raw_data)

    async def list_indexes(
        self,
        session: Any = None,
        comment: Any = None,
        batch_size: int | None = None,
        *,
        raw_data: bool | None = None,
        timeout_mode: Any = None,
    ) -> AsyncCommandCursor[MutableMapping[str, Any]]:
        """A cursor over the collection's index documents (none if it does not exist).

        ``batch_size`` is sent as listIndexes' ``cursor.batchSize`` and on every getMore
        (index-management "listIndexes" options; PyMongo has no such parameter).
        """
        if batch_size is not None and (type(batch_size) is not int or batch_size < 0):
            raise InvalidArgument(f"batch_size must be an int >= 0, not {batch_size!r}")
        op = index_ops.list_indexes(
            self._namespace,
            batch_size=batch_size,
            comment=comment,
            read_preference=self._read_preference,
            codec_options=self._codec_options,
        )
        return await open_command_cursor(
            self._client,
            with_raw_data(op, raw_data),
            session,
            self._codec_options,
            timeout_ms=self._timeout_ms,
            timeout_mode=timeout_mode,
            batch_size=batch_size or 0,
            comment=comment,
        )

    async def index_names(self, session: Any = None, comment: Any = None) -> list[str]:
        """The names of the collection's indexes (index-management's listIndexNames; not in
        PyMongo, whose index_information() gives the names as keys)."""
        cursor = await self.list_indexes(session=session, comment=comment)
        return [index["name"] for index in await cursor.to_list()]

    async def index_information(
        self, session: Any = None, comment: Any = None
    ) -> dict[str, dict[str, Any]]:
        """``{name: {"key": [(field, direction), ...], <options>}}`` (PyMongo's shape)."""
        cursor = await self.list_indexes(session=session, comment=comment)
        info: dict[str, dict[str, Any]] = {}
        for index in await cursor.to_list():
            index = dict(index)
            name = index.pop("name")
            index["key"] = list(index["key"].items())
            info[name] = index
        return info

    async def drop_index(
        self, index_or_name: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Drop one index, by name or by its keys (``"*"`` is refused: use drop_indexes)."""
        name = index_or_name = adopt_index_model(index_or_name)
        if isinstance(index_or_name, IndexModel):
            name = index_or_name.document["name"]
        elif not isinstance(index_or_name, str):
            name = index_name(index_keys(index_or_name))
        if name == "*":
            raise InvalidArgument("use drop_indexes() to drop all indexes")
        await self._drop_indexes(name, session, comment, kwargs)

    async def drop_indexes(self, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop every index but ``_id_``."""
        await self._drop_indexes("*", session, comment, kwargs)

    async def _drop_indexes(
        self, index: str, session: Any, comment: Any, kwargs: Mapping[str, Any]
    ) -> None:
        options, raw_data = command_options(kwargs, MAX_TIME, "drop_index")
        settings = self._write_settings(session)
        op = index_ops.drop_indexes(self._namespace, index, comment=comment, **settings, **options)
        await self._run(op, session, raw_data)

    # -- search indexes (Atlas) -------------------------------------------------------------
    # index-management "Search Indexes": no read or write concern is sent (Atlas refuses
    # them); keyword arguments go into the command under their server names, as in PyMongo
    # (``max_time_ms`` is also accepted for ``maxTimeMS``).

    async def create_search_index(
        self, model: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> str:
        """Create one search index (a SearchIndexModel, or a mapping of its arguments:
        ``definition``, ``name``, ``type``); returns its name. Needs an Atlas deployment."""
        names = await self.create_search_indexes([model], session, comment, **kwargs)
        return names[0]

    async def create_search_indexes(
        self, models: Iterable[Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """Create several search indexes with one createSearchIndexes; returns their names
        in order. Needs an Atlas deployment."""
        documents = [_search_model(model).document for model in models]
        op = search_ops.create_search_indexes(
            self._namespace,
            documents,
            comment=comment,
            options=_search_options(kwargs),
            codec_options=self._codec_options,
        )
        return await self._run(op, session)

    async def update_search_index(
        self,
        name: str,
        definition: Mapping[str, Any],
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> None:
        """Replace the definition of the search index ``name`` (the server applies it
        asynchronously: poll list_search_indexes to see it)."""
        op = search_ops.update_search_index(
            self._namespace,
            name,
            definition,
            comment=comment,
            options=_search_options(kwargs),
            codec_options=self._codec_options,
        )
        await self._run(op, session)

    async def drop_search_index(
        self, name: str, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Drop the search index ``name``; a missing collection is not an error (the spec:
        drops are idempotent)."""
        op = search_ops.drop_search_index(
            self._namespace,
            name,
            comment=comment,
            options=_search_options(kwargs),
            codec_options=self._codec_options,
        )
        await self._run(op, session)

    async def list_search_indexes(
        self, name: str | None = None, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> AsyncCommandCursor[Mapping[str, Any]]:
        """A cursor over the search indexes (all, or the one named ``name``): an aggregate
        with ``$listSearchIndexes``, on the primary as in PyMongo. ``kwargs`` are aggregate's
        options (``batch_size``, ``max_time_ms``, ...), also accepted grouped as
        ``aggregation_options`` (the spec's name)."""
        grouped = kwargs.pop("aggregation_options", None) or {}
        kwargs = {**check_document(grouped, "aggregation_options"), **kwargs}
        plain = self.with_options(
            read_preference=PRIMARY, read_concern=ReadConcern(), write_concern=WriteConcern()
        )
        pipeline = search_ops.list_search_indexes_pipeline(name)
        namespace = self._namespace
        return await aggregate_cursor(
            plain, namespace, False, pipeline, None, comment, kwargs, session
        )


def _search_model(model: Any) -> SearchIndexModel:
    """A SearchIndexModel (PyMongo's too), or one made from a mapping of its arguments (as
    PyMongo does)."""
    model = adopt_search_index_model(model)
    if isinstance(model, SearchIndexModel):
        return model
    if isinstance(model, Mapping) and "definition" in model:
        if all(isinstance(key, str) for key in model):
            return SearchIndexModel(**model)
    raise InvalidArgument(
        f"{model!r} is not a SearchIndexModel (or a mapping with its 'definition')"
    )


def _search_options(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The search index commands' extra fields: PyMongo's kwargs, verbatim, with our usual
    ``max_time_ms`` spelled as the server's ``maxTimeMS``."""
    return {("maxTimeMS" if key == "max_time_ms" else key): value for key, value in kwargs.items()}
