"""The collections a Queryable Encryption collection comes with (client-side encryption spec,
"Create Collection Helper" and "Drop Collection Helper"): its ESC and ECOC state
collections, named from the collection, and how the state collections are created."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["STATE_COLLECTION_OPTIONS", "state_collection_names"]

#: The state collections are clustered on _id.
STATE_COLLECTION_OPTIONS: Mapping[str, Any] = {"clusteredIndex": {"key": {"_id": 1},
                                                                  "unique": True}}


def state_collection_names(name: str, encrypted_fields: Mapping[str, Any]) -> tuple[str, str]:
    """The ESC and ECOC collection names of collection ``name`` (the encryptedFields'
    ``escCollection`` / ``ecocCollection`` when set, else ``enxcol_.<name>.esc|ecoc``)."""
    return (encrypted_fields.get("escCollection", f"enxcol_.{name}.esc"),
            encrypted_fields.get("ecocCollection", f"enxcol_.{name}.ecoc"))
