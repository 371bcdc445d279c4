"""A query analyzer for automatic encryption: the mongocryptd protocol, for the CSFLE subset.

Automatic encryption needs commands analysed before they are encrypted: libmongocrypt sends
the command, with the collection's JSON schema, to a query analyzer (mongocryptd, or the
crypt_shared library in process) which answers the command with *intent-to-encrypt
markings* in place of the values to encrypt; libmongocrypt encrypts those and the driver
sends the result (client-side encryption spec, "mongocryptd" and "BSON binary subtype 6").
mongocryptd and crypt_shared are MongoDB Enterprise binaries; this module plays the part
for JSON-schema ``encrypt`` rules, so automatic encryption runs, and is tested, without
them::

    async with QueryAnalyzer() as analyzer:
        opts = AutoEncryptionOpts(kms_providers, "keyvault.datakeys", schema_map=schemas,
                                  **analyzer.auto_encryption_options())
        async with AsyncMongoClient(uri, auto_encryption_opts=opts) as client:
            await client.db.coll.insert_one({"ssn": "457-55-5462"})   # sent encrypted

(``auto_encryption_options()`` is ``mongocryptd_uri`` = the analyzer's URI and
``mongocryptd_bypass_spawn=True``.)

What it analyses, as mongocryptd does for CSFLE (``encrypt`` in ``properties``, nested
``bsonType: "object"`` properties, ``encryptMetadata`` defaults):

- insert documents (a ``keyId`` JSON pointer names the key by the document's own field);
- the filters of find, count, distinct, delete, update, findAndModify and aggregate
  ``$match`` stages (other stages pass when their expressions name no encrypted field):
  equality, ``$eq``, ``$ne``, ``$in``, ``$nin``, ``$and``, ``$or``, ``$nor``, on
  deterministically encrypted fields;
- replacement documents and ``$set``/``$setOnInsert`` of update, findAndModify;
- explain of any of those; ``create``/``collMod`` validators and ``createIndexes``
  partial filter expressions that compare encrypted fields are refused;
- as mongocryptd 8.1+, an aggregate whose ``$lookup`` joins other collections, sent by
  libmongocrypt with ``csfleEncryptionSchemas`` (``{"db.coll": {"jsonSchema": ...,
  "isRemoteSchema": ...}}`` for the aggregated collection and every ``from``) in place of
  ``jsonSchema``: the ``$lookup`` sub-pipeline is analysed with the joined collection's
  schema, and the ``as`` field then has that schema. libmongocrypt sends this only to a
  mongocryptd whose ``maxWireVersion`` is 26 (8.1) or more: ``QueryAnalyzer(version="8.1.0")``
  (the default, 8.0, makes libmongocrypt refuse with "Upgrade mongocryptd to 8.1").

What it refuses, with mongocryptd's error where there is one: a query on a randomly
encrypted field or with a JSON-pointer key, other operators on encrypted fields,
deterministic encryption of a double, decimal, document, array or boolean, aggregation
stages that name an encrypted field outside ``$match`` or read another collection
(``$lookup`` in a single-schema request, ``$graphLookup``, ``$unionWith``, ``$facet``,
``$out``, ``$merge``) when the schema encrypts anything, a ``$lookup`` joining
(``localField``/``foreignField``/``let``) on an encrypted field or from a collection whose
schema the request lacks, pipeline updates of such collections. Queryable Encryption
(``encryptedFields``) is not analysed: a command carrying ``encryptionInformation`` is
refused, with mongocryptd 8.2's error when it also carries ``csfleEncryptionSchemas`` that
encrypt.

The marking (libmongocrypt's FLE1 placeholder) is BSON binary subtype 6 whose first byte is
0, followed by the BSON document ``{a: 1 (deterministic) | 2 (random), ki: <key UUID> | ka:
<keyAltName>, v: <value>}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from asyncmongo.bson import encode
from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.testing.protocol import Request
from asyncmongo.testing.scram import UserDirectory
from asyncmongo.testing.server.faults import Faults
from asyncmongo.testing.server.network import Connection, Network

__all__ = ["QueryAnalysisError", "QueryAnalyzer", "mark_command"]

DETERMINISTIC = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
RANDOM = "AEAD_AES_256_CBC_HMAC_SHA_512-Random"
_ALGORITHM_CODES = {DETERMINISTIC: 1, RANDOM: 2}
#: The intent-to-encrypt marking's leading byte (binary subtype 6, "Type 0").
MARKING_TYPE = 0
ENCRYPTED_SUBTYPE = 6
#: Aggregation stages that read other collections: refused when the schema encrypts.
_FOREIGN_STAGES = frozenset({"$lookup", "$graphLookup", "$unionWith", "$facet", "$out",
                             "$merge"})
_EQUALITY = frozenset({"$eq", "$ne"})
_MEMBERSHIP = frozenset({"$in", "$nin"})
_LOGICAL = frozenset({"$and", "$or", "$nor"})
#: Commands whose values never need encryption (passed back as they came).
_UNANALYSED = frozenset({"drop", "dropIndexes", "listIndexes", "killCursors", "getMore"})
_COMPARISON_REFUSED = 51221
HELLO_NAMES = frozenset({"hello", "isMaster", "ismaster"})
#: The mongocryptd versions the analyzer can claim, with their ``maxWireVersion``: 8.0 by
#: default (as the simulated servers), 8.1 and 8.2 for the analysis of several collections'
#: schemas (``csfleEncryptionSchemas``, a ``$lookup`` between them), 7.0 for older behaviour.
WIRE_VERSIONS: Mapping[str, int] = {"7.0.0": 21, "8.0.0": 25, "8.1.0": 26, "8.2.0": 27}
DEFAULT_VERSION = "8.0.0"
#: A command carrying one of these is a markings request (libmongocrypt adds the schema: one
#: collection's ``jsonSchema``, several collections' ``csfleEncryptionSchemas``, or Queryable
#: Encryption's ``encryptionInformation``).
ANALYSED_FIELDS = ("jsonSchema", "csfleEncryptionSchemas", "encryptionInformation")


class QueryAnalysisError(Exception):
    """The analyzer refuses the command (an ``ok: 0`` reply with ``code`` and ``errmsg``)."""

    def __init__(self, code: int, errmsg: str) -> None:
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg


# mongocryptd's error codes for the refusals modelled here.
_CANNOT_QUERY_RANDOM = 31158
_INVALID_OPERATOR = 51092
_DETERMINISTIC_TYPE = 31041
_POINTER_IN_QUERY = 51093
_UNSUPPORTED = 31011
_BAD_SCHEMA = 31068
_BAD_LOOKUP = 40321
_BAD_VALUE = 2


class _Analysis:
    """One command's analysis: the schema, and whether a marking was made.

    ``foreign`` is set for a ``csfleEncryptionSchemas`` request (mongocryptd 8.1+): the
    schemas of the collections a ``$lookup`` may read, by namespace, and ``database`` the
    command's database (a ``from`` is a collection of it). None for a ``jsonSchema`` request:
    then a stage reading another collection is refused when the schema encrypts anything,
    as mongocryptd before 8.1 does.
    """

    __slots__ = ("database", "defaults", "foreign", "marked", "schema")

    def __init__(self, schema: Mapping[str, Any],
                 foreign: Mapping[str, Mapping[str, Any]] | None = None,
                 database: str = "") -> None:
        self.schema = schema
        self.defaults: Mapping[str, Any] = schema.get("encryptMetadata") or {}
        self.marked = False
        self.foreign = foreign
        self.database = database

    # -- the schema -----------------------------------------------------------------------

    def rule(self, path: str) -> dict[str, Any] | None:
        """The ``encrypt`` rule of the dotted ``path`` (inherited metadata filled in), or
        None when the field is not encrypted."""
        node: Mapping[str, Any] = self.schema
        defaults = dict(self.defaults)
        parts = path.split(".")
        for index, part in enumerate(parts):
            properties = node.get("properties")
            if not isinstance(properties, Mapping) or part not in properties:
                return None
            node = properties[part]
            if not isinstance(node, Mapping):
                raise QueryAnalysisError(_BAD_SCHEMA, f"invalid schema for field {part!r}")
            meta = node.get("encryptMetadata")
            if isinstance(meta, Mapping):
                defaults.update(meta)
            if "encrypt" in node:
                if index != len(parts) - 1:
                    raise QueryAnalysisError(
                        _INVALID_OPERATOR,
                        f"Invalid operation on path '{path}' which contains an encrypted "
                        f"path prefix '{'.'.join(parts[:index + 1])}'")
                return {**defaults, **node["encrypt"]}
        return None

    def requires_encryption(self) -> bool:
        """True when the schema encrypts any field (mongocryptd's schemaRequiresEncryption)."""
        return _has_encrypt(self.schema)

    # -- markings -------------------------------------------------------------------------

    def marking(self, path: str, rule: Mapping[str, Any], value: Any,
                document: Mapping[str, Any] | None) -> Binary:
        """The intent-to-encrypt marking of ``value`` for ``path`` (``document``: the
        document being written, for a keyId JSON pointer; None in a query)."""
        algorithm = rule.get("algorithm")
        if algorithm not in _ALGORITHM_CODES:
            raise QueryAnalysisError(_BAD_SCHEMA, f"field {path!r}: invalid algorithm "
                                                  f"{algorithm!r}")
        if algorithm == DETERMINISTIC:
            _check_deterministic_type(path, value)
        marking: dict[str, Any] = {"a": _ALGORITHM_CODES[algorithm]}
        key_id = rule.get("keyId")
        if isinstance(key_id, str):
            if document is None:
                raise QueryAnalysisError(
                    _POINTER_IN_QUERY,
                    f"Comparison to encrypted field '{path}' whose keyId is a JSON pointer "
                    "is not supported")
            name = _resolve_pointer(document, key_id)
            if name is None:
                raise QueryAnalysisError(
                    _BAD_SCHEMA, f"keyId pointer {key_id!r} of field {path!r} names no field")
            marking["ka"] = name
        elif isinstance(key_id, list) and len(key_id) == 1 and _is_uuid(key_id[0]):
            marking["ki"] = key_id[0]
        else:
            raise QueryAnalysisError(_BAD_SCHEMA, f"field {path!r}: keyId must be a JSON "
                                                  "pointer or an array of one UUID")
        marking["v"] = value
        self.marked = True
        return Binary(bytes([MARKING_TYPE]) + encode(marking), ENCRYPTED_SUBTYPE)

    def document(self, doc: Mapping[str, Any], prefix: str = "",
                 root: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A document to write, its encrypted fields replaced by markings."""
        root = doc if root is None else root
        out: dict[str, Any] = {}
        for name, value in doc.items():
            path = f"{prefix}{name}"
            rule = self.rule(path)
            if rule is not None:
                out[name] = self.marking(path, rule, value, root)
            elif isinstance(value, Mapping) and self._has_nested_rules(path):
                out[name] = self.document(value, f"{path}.", root)
            else:
                out[name] = value
        return out

    def _has_nested_rules(self, path: str) -> bool:
        node: Any = self.schema
        for part in path.split("."):
            properties = node.get("properties") if isinstance(node, Mapping) else None
            if not isinstance(properties, Mapping) or part not in properties:
                return False
            node = properties[part]
        return _has_encrypt(node)

    def query(self, query: Any) -> Any:
        """A filter, its comparisons to encrypted fields replaced by markings."""
        if not isinstance(query, Mapping):
            return query
        out: dict[str, Any] = {}
        for name, value in query.items():
            if name in _LOGICAL and isinstance(value, list):
                out[name] = [self.query(clause) for clause in value]
            elif name.startswith("$"):
                out[name] = value
            else:
                out[name] = self._condition(name, value)
        return out

    def _condition(self, path: str, condition: Any) -> Any:
        rule = self.rule(path)
        if rule is None:
            return condition
        self._check_queryable(path, rule)
        if not (isinstance(condition, Mapping) and any(k.startswith("$") for k in condition)):
            return self.marking(path, rule, condition, None)
        out: dict[str, Any] = {}
        for operator, operand in condition.items():
            if operator in _EQUALITY:
                out[operator] = self.marking(path, rule, operand, None)
            elif operator in _MEMBERSHIP and isinstance(operand, list):
                out[operator] = [self.marking(path, rule, item, None) for item in operand]
            elif operator == "$exists":
                out[operator] = operand
            else:
                raise QueryAnalysisError(
                    _INVALID_OPERATOR,
                    f"Invalid match expression operator on encrypted field '{path}': "
                    f"{operator}")
        return out

    @staticmethod
    def _check_queryable(path: str, rule: Mapping[str, Any]) -> None:
        if rule.get("algorithm") == RANDOM:
            raise QueryAnalysisError(
                _CANNOT_QUERY_RANDOM,
                f"Cannot query on fields encrypted with the randomized encryption algorithm "
                f"('{path}')")

    def refuse_comparisons(self, query: Any) -> None:
        """A validator or partialFilterExpression: the server would compare plaintext to
        ciphertext, so a comparison to an encrypted field is refused (as mongocryptd
        does); ``$jsonSchema`` is the schema itself, not a comparison."""
        if not isinstance(query, Mapping):
            return
        for name, value in query.items():
            if name in _LOGICAL and isinstance(value, list):
                for clause in value:
                    self.refuse_comparisons(clause)
            elif not name.startswith("$") and self.rule(name) is not None:
                raise QueryAnalysisError(
                    _COMPARISON_REFUSED,
                    f"Comparison to encrypted fields not supported ('{name}')")

    def update(self, update: Any) -> Any:
        """An update document: a replacement is marked as a document, ``$set`` and
        ``$setOnInsert`` values of encrypted fields are marked; other operators on
        encrypted fields, and pipelines on an encrypting schema, are refused."""
        if isinstance(update, list):
            if self.requires_encryption():
                raise QueryAnalysisError(
                    _UNSUPPORTED, "Pipelines in update are not supported with automatic "
                                  "encryption by the asyncmongo.testing query analyzer")
            return update
        if not isinstance(update, Mapping):
            return update
        if not any(key.startswith("$") for key in update):
            return self.document(update)
        out: dict[str, Any] = {}
        for operator, fields in update.items():
            if not isinstance(fields, Mapping):
                out[operator] = fields
                continue
            marked: dict[str, Any] = {}
            for path, value in fields.items():
                rule = self.rule(path)
                if rule is None:
                    if isinstance(value, Mapping) and self._has_nested_rules(path):
                        if operator not in ("$set", "$setOnInsert"):
                            raise QueryAnalysisError(
                                _INVALID_OPERATOR,
                                f"{operator} is not allowed on the encrypted fields under "
                                f"'{path}'")
                        value = self.document(value, f"{path}.", value)
                    marked[path] = value
                elif operator in ("$set", "$setOnInsert"):
                    marked[path] = self.marking(path, rule, value, None)
                elif operator == "$unset":
                    marked[path] = value
                else:
                    raise QueryAnalysisError(
                        _INVALID_OPERATOR,
                        f"{operator} is not allowed on the encrypted field '{path}'")
            out[operator] = marked
        return out

    def pipeline(self, pipeline: Any) -> Any:
        """An aggregation pipeline: ``$match`` filters marked, ``$lookup`` analysed with the
        joined collection's schema when the request carries several collections' schemas,
        other stages passed when they name no encrypted field."""
        if not isinstance(pipeline, list):
            return pipeline
        out = []
        for stage in pipeline:
            name = next(iter(stage), "") if isinstance(stage, Mapping) else ""
            if name == "$match":
                out.append({"$match": self.query(stage["$match"])})
            elif name == "$lookup" and self.foreign is not None:
                out.append({"$lookup": self.lookup(stage["$lookup"])})
            elif not self.requires_encryption():
                out.append(stage)
            elif name in _FOREIGN_STAGES:
                raise QueryAnalysisError(
                    _UNSUPPORTED, f"Aggregation stage {name} is not supported with automatic "
                                  "encryption by the asyncmongo.testing query analyzer")
            else:
                self._refuse_encrypted_paths(name, stage)
                out.append(stage)
        return out

    def _refuse_encrypted_paths(self, name: str, node: Any) -> None:
        for path in _field_paths(node):
            if self.rule(path) is not None:
                raise QueryAnalysisError(
                    _UNSUPPORTED,
                    f"Aggregation stage {name} refers to the encrypted field '{path}', which "
                    "the asyncmongo.testing query analyzer does not support")

    def lookup(self, spec: Any) -> dict[str, Any]:
        """A ``$lookup`` stage of a ``csfleEncryptionSchemas`` request (mongocryptd 8.1+):
        its ``pipeline`` is analysed with the ``from`` collection's schema (so a ``$match``
        on the joined collection's encrypted field is marked with its key), and from here on
        the ``as`` field has the joined collection's schema (its elements are that
        collection's documents, decrypted by libmongocrypt in the reply).

        Refused, as this analyzer cannot tell whether the server could compare the values:
        an equality join (``localField``/``foreignField``) or a ``let`` variable on an
        encrypted field, a dotted ``as`` when a schema encrypts, a ``from`` whose schema the
        request does not carry.
        """
        assert self.foreign is not None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("from"), str):
            raise QueryAnalysisError(_BAD_LOOKUP, "$lookup needs a 'from' collection name "
                                                  "in the same database")
        namespace = f"{self.database}.{spec['from']}"
        if namespace not in self.foreign:
            raise QueryAnalysisError(
                _BAD_VALUE, f"$lookup from '{namespace}': csfleEncryptionSchemas carries "
                                 "no schema for this namespace")
        joined = _Analysis(self.foreign[namespace], self.foreign, self.database)
        local_field, foreign_field = spec.get("localField"), spec.get("foreignField")
        if isinstance(local_field, str) and self.rule(local_field) is not None:
            raise self._join_refused(local_field)
        if isinstance(foreign_field, str) and joined.rule(foreign_field) is not None:
            raise self._join_refused(f"{spec['from']}.{foreign_field}")
        self._refuse_encrypted_paths("$lookup (let)", spec.get("let") or {})
        out = dict(spec)
        if "pipeline" in spec:
            out["pipeline"] = joined.pipeline(spec["pipeline"])
            self.marked = self.marked or joined.marked
        self._join_schema(str(spec.get("as", "")), joined.schema)
        return out

    @staticmethod
    def _join_refused(path: str) -> QueryAnalysisError:
        return QueryAnalysisError(
            _UNSUPPORTED, f"$lookup joining on the encrypted field '{path}' is not supported "
                          "by the asyncmongo.testing query analyzer")

    def _join_schema(self, as_field: str, joined: Mapping[str, Any]) -> None:
        """The schema of the documents after a ``$lookup``: ``as_field`` replaced by the
        joined documents (the joined schema, as an object), so a later stage naming one of
        their encrypted fields is marked or refused as it would be on that collection."""
        if "." in as_field or not as_field:
            if self.requires_encryption() or _has_encrypt(joined):
                raise QueryAnalysisError(
                    _UNSUPPORTED, f"$lookup 'as' path '{as_field}' is not supported with "
                                  "automatic encryption by the asyncmongo.testing query "
                                  "analyzer")
            return
        properties = dict(self.schema.get("properties") or {})
        properties[as_field] = {**joined, "bsonType": "object"} if _has_encrypt(joined) else {}
        self.schema = {**self.schema, "properties": properties}


def _has_encrypt(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    if "encrypt" in node:
        return True
    properties = node.get("properties")
    if isinstance(properties, Mapping) and any(map(_has_encrypt, properties.values())):
        return True
    return bool(node.get("patternProperties")) or bool(
        isinstance(node.get("items"), Mapping) and _has_encrypt(node["items"]))


def _field_paths(node: Any) -> list[str]:
    """The field paths (``"$a.b"``) an aggregation stage's expressions refer to."""
    if isinstance(node, str):
        return [node[1:]] if node.startswith("$") and not node.startswith("$$") else []
    if isinstance(node, Mapping):
        return [path for value in node.values() for path in _field_paths(value)]
    if isinstance(node, list):
        return [path for value in node for path in _field_paths(value)]
    return []


def _is_uuid(value: Any) -> bool:
    return isinstance(value, Binary) and value.subtype == UUID_SUBTYPE


def _check_deterministic_type(path: str, value: Any) -> None:
    if isinstance(value, bool | float | Decimal128 | Mapping | list) or value is None:
        kind = "null" if value is None else type(value).__name__
        raise QueryAnalysisError(
            _DETERMINISTIC_TYPE,
            f"Cannot encrypt element of type {kind} with the deterministic encryption "
            f"algorithm ('{path}')")


def _resolve_pointer(document: Mapping[str, Any], pointer: str) -> Any:
    node: Any = document
    for part in pointer.lstrip("/").split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def mark_command(request: Mapping[str, Any]) -> dict[str, Any]:
    """mongocryptd's reply to a markings request: ``request`` is the command as
    libmongocrypt sends it, with the collection's ``jsonSchema`` and ``isRemoteSchema``, or
    (a command reading several collections, an aggregate with ``$lookup``; mongocryptd 8.1+)
    ``csfleEncryptionSchemas``: ``{"db.coll": {"jsonSchema": ..., "isRemoteSchema": ...}}``
    for the command's collection and each one it joins. The reply has ``result`` (the
    command with markings, without those fields or ``$db``), ``hasEncryptionPlaceholders``
    and ``schemaRequiresEncryption``. Raises QueryAnalysisError for what it refuses."""
    if "encryptionInformation" in request:
        _refuse_csfle_schemas_with_queryable_encryption(request)
        raise QueryAnalysisError(
            _UNSUPPORTED, "Queryable Encryption (encryptionInformation) is not analysed by the "
                          "asyncmongo.testing query analyzer")
    command = {k: v for k, v in request.items() if k not in _REQUEST_ONLY_FIELDS}
    if "csfleEncryptionSchemas" in request:
        analysis = _multiple_schemas_analysis(request, command)
        requires = any(map(_has_encrypt, analysis.foreign.values() if analysis.foreign else ()))
    else:
        schema = request.get("jsonSchema") or {}
        if not isinstance(schema, Mapping):
            raise QueryAnalysisError(_BAD_SCHEMA, "jsonSchema must be a document")
        analysis = _Analysis(schema)
        requires = analysis.requires_encryption()
    result = _mark(analysis, command)
    return {
        "hasEncryptionPlaceholders": analysis.marked,
        "schemaRequiresEncryption": requires,
        "result": result,
        "ok": 1,
    }


def _refuse_csfle_schemas_with_queryable_encryption(request: Mapping[str, Any]) -> None:
    """mongocryptd 8.2's refusal of a command joining Queryable Encryption and CSFLE
    collections (libmongocrypt 1.17+ sends both ``encryptionInformation`` and
    ``csfleEncryptionSchemas`` to 8.2+; prose test 25 case 8): the JSON schemas may only be
    validators that encrypt nothing."""
    entries = request.get("csfleEncryptionSchemas")
    if not isinstance(entries, Mapping):
        return
    for entry in entries.values():
        if isinstance(entry, Mapping) and _has_encrypt(entry.get("jsonSchema")):
            raise QueryAnalysisError(
                _BAD_VALUE, "Cannot specify both encryptionInformation and "
                            "csfleEncryptionSchemas unless csfleEncryptionSchemas only contains "
                            "non-encryption JSON schema validators")


#: The fields libmongocrypt adds to a markings request, not part of the command analysed.
_REQUEST_ONLY_FIELDS = frozenset({"jsonSchema", "isRemoteSchema", "csfleEncryptionSchemas",
                                  "$db"})


def _multiple_schemas_analysis(request: Mapping[str, Any],
                               command: Mapping[str, Any]) -> _Analysis:
    """The analysis of a ``csfleEncryptionSchemas`` request: the command's collection's
    schema, with every schema of the request for the collections it joins."""
    if "jsonSchema" in request:
        raise QueryAnalysisError(
            _BAD_SCHEMA, "jsonSchema and csfleEncryptionSchemas cannot both be given")
    entries = request["csfleEncryptionSchemas"]
    if not isinstance(entries, Mapping) or not entries:
        raise QueryAnalysisError(_BAD_SCHEMA, "csfleEncryptionSchemas must be a non-empty "
                                              "document of namespaces")
    schemas: dict[str, Mapping[str, Any]] = {}
    for namespace, entry in entries.items():
        schema = entry.get("jsonSchema") if isinstance(entry, Mapping) else None
        if not isinstance(schema, Mapping):
            raise QueryAnalysisError(
                _BAD_SCHEMA, f"csfleEncryptionSchemas['{namespace}'] must be a document with "
                             "a jsonSchema document")
        schemas[namespace] = schema
    database = str(request.get("$db", ""))
    analysed = command
    if isinstance(command.get("explain"), Mapping):  # the explained command's collection
        analysed = command["explain"]
    namespace = f"{database}.{analysed.get(next(iter(analysed), ''))}"
    if namespace not in schemas:
        raise QueryAnalysisError(
            _BAD_VALUE, f"csfleEncryptionSchemas carries no schema for the command's "
                             f"namespace '{namespace}'")
    return _Analysis(schemas[namespace], schemas, database)


def _mark(analysis: _Analysis, command: dict[str, Any]) -> dict[str, Any]:
    name = next(iter(command), "")
    out = dict(command)
    if name == "insert":
        out["documents"] = [analysis.document(doc) for doc in command.get("documents", [])]
    elif name in ("find", "count"):
        key = "filter" if name == "find" else "query"
        if key in command:
            out[key] = analysis.query(command[key])
    elif name == "distinct":
        rule = analysis.rule(str(command.get("key", "")))
        if rule is not None:
            analysis._check_queryable(str(command["key"]), rule)
        if "query" in command:
            out["query"] = analysis.query(command["query"])
    elif name == "delete":
        out["deletes"] = [{**stmt, "q": analysis.query(stmt.get("q", {}))}
                          for stmt in command.get("deletes", [])]
    elif name == "update":
        out["updates"] = [{**stmt, "q": analysis.query(stmt.get("q", {})),
                           "u": analysis.update(stmt.get("u", {}))}
                          for stmt in command.get("updates", [])]
    elif name == "findAndModify":
        if "query" in command:
            out["query"] = analysis.query(command["query"])
        if "update" in command:
            out["update"] = analysis.update(command["update"])
    elif name == "aggregate":
        out["pipeline"] = analysis.pipeline(command.get("pipeline", []))
    elif name in ("create", "collMod"):
        analysis.refuse_comparisons(command.get("validator"))
    elif name == "createIndexes":
        for index in command.get("indexes") or ():
            if isinstance(index, Mapping):
                analysis.refuse_comparisons(index.get("partialFilterExpression"))
    elif name == "explain":
        inner = command.get("explain")
        if isinstance(inner, Mapping):
            out["explain"] = _mark(analysis, dict(inner))
    elif name not in _UNANALYSED and analysis.requires_encryption():
        raise QueryAnalysisError(
            _UNSUPPORTED, f"command not supported for auto encryption by the "
                          f"asyncmongo.testing query analyzer: {name}")
    return out


class QueryAnalyzer:
    """A mongocryptd stand-in on 127.0.0.1: point ``mongocryptd_uri`` at :attr:`uri`.

    It answers ``hello``/``isMaster`` as mongocryptd does (``iscryptd: true``, no sessions),
    ``ping``, ``buildInfo`` and ``endSessions``, and every command carrying ``jsonSchema``
    with :func:`mark_command`'s reply. ``requests`` records the markings requests received
    (for tests).
    """

    __slots__ = ("_network", "last_request_at", "max_wire_version", "requests", "version")

    def __init__(self, port: int = 0, *, version: str = DEFAULT_VERSION) -> None:
        self._network = Network(Faults(), port=port, users=UserDirectory(),
                                ssl_context=None, host_name="127.0.0.1")
        if version not in WIRE_VERSIONS:
            raise ValueError(f"QueryAnalyzer version must be one of {sorted(WIRE_VERSIONS)}, "
                             f"not {version!r}")
        #: The mongocryptd version it plays (``buildInfo``) and its ``maxWireVersion``
        #: (``hello``): libmongocrypt reads the latter to decide whether this mongocryptd
        #: accepts ``csfleEncryptionSchemas`` (8.1+, wire version 26).
        self.version = version
        self.max_wire_version = WIRE_VERSIONS[version]
        self.requests: list[dict[str, Any]] = []
        #: loop.time() of the last request (for ``--idleShutdownTimeoutSecs``).
        self.last_request_at = 0.0

    @property
    def uri(self) -> str:
        """``mongodb://127.0.0.1:<port>``: the value for ``mongocryptd_uri``."""
        return f"mongodb://127.0.0.1:{self._network.port}"

    def auto_encryption_options(self) -> dict[str, Any]:
        """The AutoEncryptionOpts keywords that use this analyzer instead of spawning
        mongocryptd."""
        return {"mongocryptd_uri": self.uri, "mongocryptd_bypass_spawn": True}

    async def start(self) -> None:
        await self._network.listen(self._respond)

    async def stop(self) -> None:
        await self._network.close()

    async def __aenter__(self) -> QueryAnalyzer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    async def _respond(self, conn: Connection, request: Request) -> bool:
        self.last_request_at = asyncio.get_running_loop().time()
        command = request.command
        name = request.name
        reply: dict[str, Any]
        if name in HELLO_NAMES:
            reply = {
                "ismaster": True, "isWritablePrimary": True, "iscryptd": True,
                "maxBsonObjectSize": 16 * 1024 * 1024, "maxMessageSizeBytes": 48000000,
                "maxWriteBatchSize": 100000, "minWireVersion": 0,
                "maxWireVersion": self.max_wire_version,
                "connectionId": conn.connection_id, "ok": 1,
            }
        elif any(field in command for field in ANALYSED_FIELDS):
            self.requests.append(dict(command))
            try:
                reply = mark_command(command)
            except QueryAnalysisError as exc:
                reply = {"ok": 0, "errmsg": exc.errmsg, "code": exc.code}
        elif name in ("ping", "endSessions"):
            reply = {"ok": 1}
        elif name == "buildInfo" or name == "buildinfo":
            reply = {"version": self.version,
                     "versionArray": [*map(int, self.version.split(".")), 0], "ok": 1}
        else:
            reply = {"ok": 0, "code": 59, "errmsg": f"no such command: '{name}'"}
        with contextlib.suppress(ConnectionError):
            return await self._network.send(conn, request, reply)
        return False


async def serve(port: int, idle_shutdown_secs: float) -> None:
    """Run a QueryAnalyzer on ``port`` until no request came for ``idle_shutdown_secs``
    (mongocryptd's ``--idleShutdownTimeoutSecs``)."""
    loop = asyncio.get_running_loop()
    async with QueryAnalyzer(port) as analyzer:
        analyzer.last_request_at = loop.time()
        idle = 0.0
        while idle < idle_shutdown_secs:
            await asyncio.sleep(idle_shutdown_secs - idle)
            idle = loop.time() - analyzer.last_request_at


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m asyncmongo.testing.query_analyzer --port 27020
    --idleShutdownTimeoutSecs=60``: mongocryptd's command line, so it can be spawned in its
    place (``mongocryptd_spawn_path`` naming a script that runs this); unknown mongocryptd
    options are ignored."""
    parser = argparse.ArgumentParser(prog="asyncmongo.testing.query_analyzer")
    parser.add_argument("--port", type=int, default=27020)
    parser.add_argument("--idleShutdownTimeoutSecs", type=float, default=60.0)
    args, _ = parser.parse_known_args(argv)
    asyncio.run(serve(args.port, args.idleShutdownTimeoutSecs))


if __name__ == "__main__":
    main()
