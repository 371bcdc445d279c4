"""Document validation: a collection's ``validator`` (a query filter) checked on every insert
and update, as the server does (``validationLevel`` strict/moderate/off, ``validationAction``
error/warn, ``bypassDocumentValidation``). A top-level ``$jsonSchema`` is enforced for the
keywords of :mod:`~asyncmongo.testing.store.json_schema` (those of client-side encryption's
schemas); other keywords, and ``$jsonSchema`` elsewhere, are refused when the collection is
created or modified, rather than silently not enforced."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.collection import Collection, Document
from asyncmongo.testing.store.encrypted_fields import check_encrypted_document
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.json_schema import check_schema, schema_matches
from asyncmongo.testing.store.matcher import compile_filter
from asyncmongo.testing.store.text_index import check_language_override


def check_validator_options(options: Mapping[str, Any]) -> None:
    """Refuse what the store cannot enforce; compile the validator so bad ones fail now."""
    validator = options.get("validator")
    if validator is None:
        return
    if not isinstance(validator, Mapping):
        raise StoreError(14, "'validator' must be an object")
    rest = {k: v for k, v in validator.items() if k != "$jsonSchema"}
    if "$jsonSchema" in validator:
        check_schema(validator["$jsonSchema"])
    if "$jsonSchema" in str(rest):
        raise bad_value("$jsonSchema is supported by the asyncmongo store only as the "
                        "validator's top-level field")
    compile_filter(rest)
    level = options.get("validationLevel", "strict")
    action = options.get("validationAction", "error")
    if level not in ("strict", "moderate", "off"):
        raise bad_value(f"Enumeration value '{level}' for field 'validationLevel' is not a valid "
                        "value.")
    if action not in ("error", "warn", "errorAndLog"):
        raise bad_value(f"Enumeration value '{action}' for field 'validationAction' is not a "
                        "valid value.")


def check_document(collection: Collection, document: Document, old: Document | None,
                   command: Mapping[str, Any]) -> None:
    """Fail with 121 DocumentValidationFailure if ``document`` breaks the validator (or
    leaves a Queryable Encryption field unencrypted), and refuse a language override field
    a text index cannot read (17261/17262)."""
    options = collection.options
    check_encrypted_document(options, document)
    for index in collection.indexes.values():
        if "_fts" in index.spec.get("key", {}):
            check_language_override(index.spec, document)
    validator = options.get("validator")
    if not validator or command.get("bypassDocumentValidation") is True:
        return
    level = options.get("validationLevel", "strict")
    if level == "off" or options.get("validationAction", "error") == "warn":
        return
    rest = compile_filter({k: v for k, v in validator.items() if k != "$jsonSchema"})
    schema = validator.get("$jsonSchema")

    def predicate(doc: Document) -> bool:
        return rest(doc) and (schema is None or schema_matches(schema, doc))

    if old is not None and level == "moderate" and not predicate(old):
        return
    if not predicate(document):
        raise StoreError(121, "Document failed validation", extra={"errInfo": {
            "failingDocumentId": document.get("_id"),
            "details": {"operatorName": "$and", "specifiedAs": dict(validator),
                        "reason": "the document does not match the collection's validator"},
        }})
