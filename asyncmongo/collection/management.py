"""AsyncCollection's management of itself: drop, rename and its creation options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncmongo.bson.typings import _DocumentType
from asyncmongo.collection.base import CollectionBase
from asyncmongo.core.operations import management
from asyncmongo.core.operations.common import (
    Namespace,
    check_collection_name,
)
from asyncmongo.errors import InvalidArgument

if TYPE_CHECKING:
    pass

__all__ = ["CollectionManagement"]



class CollectionManagement(CollectionBase[_DocumentType]):
    """drop, rename and options of :class:`~asyncmongo.collection.AsyncCollection`."""

    __slots__ = ()

    async def drop(
        self, session: Any = None, comment: Any = None, encrypted_fields: Any = None
    ) -> None:
        """Drop the collection (dropping one that does not exist is not an error); a Queryable
        Encryption collection with its state collections (see ``AsyncDatabase.drop_collection``).
        """
        await self._parent.drop_collection(self._name, session=session, comment=comment,
                                           encrypted_fields=encrypted_fields)

    async def rename(
        self, new_name: str, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Mapping[str, Any]:
        """renameCollection to ``new_name`` in the same database (``dropTarget=True`` to
        replace an existing one)."""
        check_collection_name(new_name)
        drop_target = kwargs.pop("dropTarget", kwargs.pop("drop_target", None))
        if kwargs:
            raise InvalidArgument(f"rename() got unexpected keyword arguments {sorted(kwargs)}")
        op = management.rename_collection(
            self._namespace,
            Namespace(self._namespace.database, new_name),
            drop_target=drop_target,
            comment=comment,
            **self._write_settings(session),
        )
        return await self._run(op, session)

    async def options(self, session: Any = None, comment: Any = None) -> dict[str, Any]:
        """The options the collection was created with (``{}`` when there are none)."""
        cursor = await self._parent.list_collections(
            session=session, filter={"name": self._name}, comment=comment
        )
        for info in await cursor.to_list():
            options = dict(info.get("options", {}))
            options.pop("create", None)
            return options
        return {}
