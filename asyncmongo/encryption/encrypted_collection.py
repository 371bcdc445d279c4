"""Creating a Queryable Encryption collection (client-side encryption spec, "Create
Collection Helper"): its two state collections, the collection with its encryptedFields, and
the ``__safeContent__`` index, in that order; the first failure stops the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.database import AsyncDatabase

__all__ = ["create_with_encrypted_fields", "state_collection_names"]

#: The state collections are clustered on _id.
STATE_COLLECTION_OPTIONS: Mapping[str, Any] = {"clusteredIndex": {"key": {"_id": 1},
                                                                  "unique": True}}


def state_collection_names(name: str, encrypted_fields: Mapping[str, Any]) -> tuple[str, str]:
    """The ESC and ECOC collection names of collection ``name`` (the encryptedFields'
    ``escCollection`` / ``ecocCollection`` when set, else ``enxcol_.<name>.esc|ecoc``)."""
    return (encrypted_fields.get("escCollection", f"enxcol_.{name}.esc"),
            encrypted_fields.get("ecocCollection", f"enxcol_.{name}.ecoc"))


async def create_with_encrypted_fields(
    database: AsyncDatabase[Any], name: str, encrypted_fields: Mapping[str, Any],
    options: Mapping[str, Any],
) -> AsyncCollection[Any]:
    """Create ``name`` in ``database`` with ``encrypted_fields`` and the create ``options``,
    after its ESC and ECOC state collections; then index ``__safeContent__``."""
    for state_name in state_collection_names(name, encrypted_fields):
        await database.create_collection(state_name, check_exists=False,
                                         **STATE_COLLECTION_OPTIONS)
    extra = {key: value for key, value in options.items() if key != "check_exists"}
    collection = await database.create_collection(
        name, check_exists=False, encryptedFields=encrypted_fields, **extra
    )
    await collection.create_index([("__safeContent__", 1)])
    return collection
