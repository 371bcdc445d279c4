"""The ``$jsonSchema`` validator subset the store enforces: what client-side field level
encryption's schemas use.

Keywords: ``bsonType`` (a type alias or a list of them), ``properties``, ``required``,
``additionalProperties`` (a boolean), ``encrypt`` (the field must hold ciphertext: BinData
subtype 6, as mongod checks), ``encryptMetadata``, ``title`` and ``description``. Any other
keyword is refused when the collection is created or modified, rather than silently not
enforced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.binary import Binary
from asyncmongo.testing.store.compare import TYPE_CODES, type_name
from asyncmongo.testing.store.errors import bad_value

__all__ = ["check_schema", "schema_matches"]

_KEYWORDS = frozenset({"bsonType", "properties", "required", "additionalProperties",
                       "encrypt", "encryptMetadata", "title", "description"})
_ENCRYPTED_SUBTYPE = 6


def check_schema(schema: Any) -> None:
    """Refuse a schema with keywords the store does not enforce."""
    if not isinstance(schema, Mapping):
        raise bad_value("$jsonSchema must be an object")
    for keyword, value in schema.items():
        if keyword not in _KEYWORDS:
            raise bad_value(f"$jsonSchema keyword '{keyword}' is not supported by the "
                            "asyncmongo store")
        if keyword == "bsonType":
            names = value if isinstance(value, list) else [value]
            for name in names:
                if name not in TYPE_CODES and name != "number":
                    raise bad_value(f"Unknown type name alias: {name}")
        elif keyword == "properties":
            if not isinstance(value, Mapping):
                raise bad_value("$jsonSchema keyword 'properties' must be an object")
            for sub in value.values():
                check_schema(sub)
        elif keyword == "additionalProperties" and not isinstance(value, bool):
            raise bad_value("$jsonSchema 'additionalProperties' must be a boolean here")


def schema_matches(schema: Mapping[str, Any], value: Any) -> bool:
    """True when ``value`` satisfies ``schema`` (checked with :func:`check_schema`)."""
    if "encrypt" in schema:
        return isinstance(value, Binary) and value.subtype == _ENCRYPTED_SUBTYPE
    kind = schema.get("bsonType")
    if kind is not None:
        names = kind if isinstance(kind, list) else [kind]
        actual = type_name(value)
        if actual not in names and not (
                "number" in names and actual in ("int", "long", "double", "decimal")):
            return False
    if not isinstance(value, Mapping):
        return True
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            return False
    if schema.get("additionalProperties") is False and any(k not in properties for k in value):
        return False
    return all(schema_matches(sub, value[name])
               for name, sub in properties.items() if name in value)
