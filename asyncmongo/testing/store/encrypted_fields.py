"""Queryable Encryption collections as mongod 7+ treats them: ``create`` checks the
``encryptedFields`` document (paths, UUID key ids), and every insert and update of such a
collection must carry each encrypted field as ciphertext (BSON binary subtype 6), else
121 DocumentValidationFailure, as from a client unaware of the encryption.

The state collections (``enxcol_.<name>.esc`` / ``.ecoc``) are created by the driver (client-
side encryption spec, "Create Collection Helper"); the store keeps them as ordinary
collections. Queries over encrypted payloads (equality or range tokens) are not evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.testing.store.errors import StoreError

__all__ = ["check_encrypted_document", "check_encrypted_fields_option"]

ENCRYPTED_SUBTYPE = 6
_BSON_TYPE_NAMES = {bool: "bool", int: "int", str: "string", float: "double",
                    type(None): "null", list: "array", dict: "object"}


def _type_name(value: Any) -> str:
    return _BSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _wrong_type(field: str, value: Any, expected: str) -> StoreError:
    return StoreError(14, f"BSON field 'create.encryptedFields.{field}' is the wrong type "
                          f"'{_type_name(value)}', expected type '{expected}'")


def check_encrypted_fields_option(options: Mapping[str, Any]) -> None:
    """``create``'s ``encryptedFields``: a document whose ``fields`` each have a string
    ``path`` and a UUID ``keyId``."""
    encrypted = options.get("encryptedFields")
    if encrypted is None:
        return
    if not isinstance(encrypted, Mapping):
        raise _wrong_type("", encrypted, "object")
    fields = encrypted.get("fields")
    if not isinstance(fields, list):
        raise _wrong_type("fields", fields, "array")
    paths = set()
    for field in fields:
        if not isinstance(field, Mapping):
            raise _wrong_type("fields", field, "object")
        if not isinstance(field.get("path"), str):
            raise _wrong_type("fields.path", field.get("path"), "string")
        key_id = field.get("keyId")
        if not (isinstance(key_id, Binary) and key_id.subtype == UUID_SUBTYPE):
            raise _wrong_type("fields.keyId", key_id, "binData")
        if field["path"] in paths:
            raise StoreError(6338402, f"Duplicate path is not allowed: {field['path']}")
        paths.add(field["path"])


def _lookup(document: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    value: Any = document
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def check_encrypted_document(options: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    """121 DocumentValidationFailure if a field of the collection's ``encryptedFields`` is
    present in ``document`` but not encrypted."""
    encrypted = options.get("encryptedFields")
    if not isinstance(encrypted, Mapping):
        return
    for field in encrypted.get("fields", ()):
        present, value = _lookup(document, field["path"])
        if present and not (isinstance(value, Binary) and value.subtype == ENCRYPTED_SUBTYPE):
            raise StoreError(121, "Document failed validation", extra={"errInfo": {
                "failingDocumentId": document.get("_id"),
                "details": {"operatorName": "$jsonSchema",
                            "reason": f"field {field['path']!r} must be encrypted "
                                      "(Queryable Encryption)"},
            }})
