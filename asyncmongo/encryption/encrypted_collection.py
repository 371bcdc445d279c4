"""Creating a Queryable Encryption collection for ``create_encrypted_collection``: the
database's ``create_collection`` with ``encryptedFields`` does the spec's "Create Collection
Helper" (the two state collections, the collection, the ``__safeContent__`` index)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncmongo.core.operations.encrypted_fields import state_collection_names

if TYPE_CHECKING:
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.database import AsyncDatabase

__all__ = ["create_with_encrypted_fields", "state_collection_names"]


async def create_with_encrypted_fields(
    database: AsyncDatabase[Any], name: str, encrypted_fields: Mapping[str, Any],
    options: Mapping[str, Any],
) -> AsyncCollection[Any]:
    """Create ``name`` in ``database`` with ``encrypted_fields`` and the create ``options``
    (its state collections first, its ``__safeContent__`` index last)."""
    extra = {key: value for key, value in options.items() if key != "check_exists"}
    return await database.create_collection(
        name, check_exists=False, encryptedFields=encrypted_fields, **extra)
