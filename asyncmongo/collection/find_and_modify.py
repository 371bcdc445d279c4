"""AsyncCollection's find_one_and_delete / _replace / _update (one findAndModify each)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncmongo.collection.arguments import (
    FAM_OPTIONS,
    command_options,
)
from asyncmongo.collection.base import CollectionBase
from asyncmongo.core.operations.find import projection_document
from asyncmongo.core.operations.find_and_modify import ReturnDocument, find_and_modify
from asyncmongo.errors import InvalidArgument
from asyncmongo.scope import no_session
from asyncmongo.session import sessions_bound

if TYPE_CHECKING:
    pass

__all__ = ["CollectionFindAndModify"]



@sessions_bound
class CollectionFindAndModify(CollectionBase):
    """The findAndModify methods of :class:`~asyncmongo.collection.AsyncCollection`."""

    __slots__ = ()

    async def _find_and_modify(self, filter: Any, session: Any, **options: Any) -> Any:
        no_session(session)
        extra, raw_data = command_options(options.pop("kwargs"), FAM_OPTIONS, "find_one_and_*")
        settings = self._write_settings()
        op = find_and_modify(self._namespace, filter, **settings, **options, **extra)
        return await self._run(op, raw_data)

    async def find_one_and_delete(
        self,
        filter: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        return await self._find_and_modify(
            filter,
            session,
            remove=True,
            projection=projection_document(projection),
            sort=sort,
            hint=hint,
            let=let,
            comment=comment,
            kwargs=kwargs,
        )

    async def find_one_and_replace(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: ReturnDocument | bool = ReturnDocument.BEFORE,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        return await self._find_and_modify(
            filter,
            session,
            replacement=replacement,
            projection=projection_document(projection),
            sort=sort,
            upsert=upsert or None,
            return_document=return_document,
            hint=hint,
            let=let,
            comment=comment,
            kwargs=kwargs,
        )

    async def find_one_and_update(
        self,
        filter: Mapping[str, Any],
        update: Any,
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: ReturnDocument | bool = ReturnDocument.BEFORE,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        if update is None:
            raise InvalidArgument("update must be an update document or a pipeline")
        return await self._find_and_modify(
            filter,
            session,
            update=update,
            projection=projection_document(projection),
            sort=sort,
            upsert=upsert or None,
            return_document=return_document,
            array_filters=array_filters,
            hint=hint,
            let=let,
            comment=comment,
            kwargs=kwargs,
        )
