"""Client-side encryption prose test 25, "Test $lookup" (spec-tests client-side-encryption
tests/README.md): an aggregate whose ``$lookup`` joins collections with CSFLE schemas, or
none, is automatically encrypted end to end.

libmongocrypt (``enable_multiple_collinfo``) runs listCollections for the aggregated
collection and for each ``$lookup`` ``from``, asks mongocryptd ``isMaster`` for its wire
version (8.1, wire version 26, is needed for several schemas: below it fails with
"Upgrade"), then sends the aggregate with ``csfleEncryptionSchemas`` (one ``jsonSchema``
per namespace). asyncmongo.testing's QueryAnalyzer plays mongocryptd (``version="8.1.0"``
for cases 1-8, the default 8.0 for case 9) and marks the ``$match`` of the joined
collection's sub-pipeline with that collection's key; the simulated server runs the
``$lookup`` on ciphertext; libmongocrypt decrypts the joined documents in the reply.

The README requires server 8.1+ and "must be skipped on standalone" (the Queryable
Encryption collections need a replica set): the cases run on a one-member simulated
replica set that reports 8.1 (``member.MAX_WIRE_VERSION``/``builtins.SERVER_VERSION``
patched for these tests only, as other 8.x tests do).

The setup files of ``etc/data/lookup`` (key-doc.json, schema-csfle.json, ...) are not in the
vendored spec tests: the data key is made by ClientEncryption with the local KMS provider
(then inserted into ``db.keyvault`` as the README's key-doc.json is), and the schemas are
written here from the README's description: ``csfle``/``csfle2`` deterministically
encrypted strings under that key, ``non_csfle_schema`` a schema that encrypts nothing.

Cases 2, 4, 6 and 10 read a Queryable Encryption collection (``db.qe``/``db.qe2``,
``encryptedFields``) and need QE query analysis and the server's QE payload processing,
neither simulated: they are skipped with that reason. Case 8 (``db.csfle`` joins ``db.qe``)
runs, as its expected error comes before any QE analysis: from libmongocrypt with
mongocryptd 8.1 ("not supported ... below 8.2"), from mongocryptd itself with 8.2 ("Cannot
specify both encryptionInformation and csfleEncryptionSchemas ..."), both checked. For it the
setup creates ``db.qe``/``db.qe2`` (by ``unencryptedClient``) but cannot insert their
documents (QE analysis), which the error does not depend on.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import WriteConcern
from asyncmongo.encryption import AsyncClientEncryption, AutoEncryptionOpts, EncryptionError
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import QueryAnalyzer, ReplicaSet, builtins, member
from asyncmongo.testing.query_analyzer import QueryAnalysisError, mark_command

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

LOCAL_MASTERKEY = bytes(range(96))
KMS_PROVIDERS = {"local": {"key": LOCAL_MASTERKEY}}
KEY_VAULT = "db.keyvault"
DETERMINISTIC = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
#: The maxWireVersion of the server versions these tests claim.
WIRE_VERSIONS = {"8.0.0": 25, "8.1.0": 26, "8.2.0": 27}
QE_REASON = ("reads a Queryable Encryption collection (db.qe/db.qe2, encryptedFields): "
             "its setup inserts and its aggregate need Queryable Encryption query analysis "
             "(encryptionInformation), which the asyncmongo.testing QueryAnalyzer does not do, "
             "and the simulated server keeps encryptedFields collections but does not process "
             "QE payloads (ESC/ECOC tokens, __safeContent__, equality find payloads)")


def csfle_schema(field: str, key_id: Binary) -> dict[str, Any]:
    """schema-csfle.json / schema-csfle2.json: ``field`` a deterministically encrypted
    string under the key of key-doc.json."""
    return {"bsonType": "object", "properties": {field: {"encrypt": {
        "keyId": [key_id], "bsonType": "string", "algorithm": DETERMINISTIC}}}}


def qe_fields(field: str, key_id: Binary) -> dict[str, Any]:
    """schema-qe.json / schema-qe2.json: ``field`` an equality-indexed encrypted string."""
    return {"fields": [{"keyId": key_id, "path": field, "bsonType": "string",
                        "queries": {"queryType": "equality", "contention": 0}}]}


#: schema-non-csfle.json: a JSON schema validator that encrypts nothing.
NON_CSFLE_SCHEMA: dict[str, Any] = {
    "bsonType": "object", "properties": {"non_csfle_schema": {"bsonType": "string"}}}


class Lookup:
    """The prose test's setup: the deployment, the analyzer, ``unencryptedClient`` and a
    factory for a fresh ``encryptedClient`` (recreated per case so no schema is cached)."""

    def __init__(self, deployment: ReplicaSet, analyzer: QueryAnalyzer,
                 unencrypted: AsyncMongoClient[Any]) -> None:
        self.deployment = deployment
        self.analyzer = analyzer
        self.unencrypted = unencrypted
        self.events: list[Any] = []

    def encrypted_client(self) -> AsyncMongoClient[Any]:
        """``encryptedClient``: keyVaultNamespace db.keyvault, the local KMS provider, the
        analyzer as mongocryptd."""
        opts = AutoEncryptionOpts(KMS_PROVIDERS, KEY_VAULT,
                                  **self.analyzer.auto_encryption_options())
        return AsyncMongoClient(self.deployment.uri, auto_encryption_opts=opts,
                                event_listeners=[self.events.append])

    async def aggregate(self, collection: str, pipeline: list[dict[str, Any]]
                        ) -> list[dict[str, Any]]:
        """The case's aggregate on ``db.<collection>`` with a recreated ``encryptedClient``."""
        async with self.encrypted_client() as client:
            cursor = await client.db[collection].aggregate(pipeline)
            return await cursor.to_list()

    def sent_aggregates(self) -> list[dict[str, Any]]:
        """The aggregate commands as sent to the server (after encryption)."""
        return [dict(event.command) for event in self.events
                if isinstance(event, CommandStartedEvent) and event.command_name == "aggregate"]


@contextlib.asynccontextmanager
async def prose_setup(monkeypatch: pytest.MonkeyPatch, version: str) -> AsyncIterator[Lookup]:
    """The README's setup against a one-member replica set and a QueryAnalyzer that both
    report ``version`` (``member``/``builtins`` patched for this test only).

    ``db.qe``/``db.qe2`` are created with their encryptedFields (the simulator keeps
    encryptedFields collections and their state collections) by ``unencryptedClient`` (on
    ``encryptedClient`` that ``create`` is Queryable Encryption analysis), and ``{"qe": "qe"}`` and
    ``{"qe2": "qe2"}`` are not inserted: that insert is Queryable Encryption analysis
    (``encryptionInformation``), which the QueryAnalyzer does not do."""
    monkeypatch.setattr(member, "MAX_WIRE_VERSION", WIRE_VERSIONS[version])
    monkeypatch.setattr(builtins, "SERVER_VERSION", version)
    async with ReplicaSet(1) as deployment, QueryAnalyzer(version=version) as analyzer, \
            AsyncMongoClient(deployment.uri) as unencrypted:
        # key-doc.json: a local-KMS data key, made in a scratch key vault and inserted into
        # db.keyvault by encryptedClient as the README does.
        async with AsyncClientEncryption(KMS_PROVIDERS, "scratch.keyvault", unencrypted,
                                         CodecOptions()) as client_encryption:
            key_id = await client_encryption.create_data_key("local")
        key_doc = await unencrypted.scratch.keyvault.find_one({"_id": key_id})
        assert key_doc is not None
        env = Lookup(deployment, analyzer, unencrypted)
        async with env.encrypted_client() as encrypted:
            db = encrypted.db
            await db.drop_collection("keyvault")
            await db.get_collection("keyvault", write_concern=WriteConcern("majority")
                                    ).insert_one(key_doc)
            options: dict[str, dict[str, Any]] = {
                "csfle": {"validator": {"$jsonSchema": csfle_schema("csfle", key_id)}},
                "csfle2": {"validator": {"$jsonSchema": csfle_schema("csfle2", key_id)}},
                "qe": {"encryptedFields": qe_fields("qe", key_id)},
                "qe2": {"encryptedFields": qe_fields("qe2", key_id)},
                "no_schema": {},
                "no_schema2": {},
                "non_csfle_schema": {"validator": {"$jsonSchema": NON_CSFLE_SCHEMA}},
            }
            for name, collection_options in options.items():
                # The QE collections by unencryptedClient: on encryptedClient libmongocrypt
                # sends their create with encryptionInformation to the analyzer.
                creator = unencrypted.db if name in ("qe", "qe2") else db
                await creator.drop_collection(name, encrypted_fields=collection_options.get(
                    "encryptedFields"))
                await creator.create_collection(name, **collection_options)
            for name in ("csfle", "csfle2", "no_schema", "no_schema2", "non_csfle_schema"):
                await db[name].insert_one({name: name})
            for name in ("csfle", "csfle2"):
                stored = await unencrypted.db[name].find_one()
                assert stored is not None
                assert isinstance(stored[name], Binary) and stored[name].subtype == 6
        env.events.clear()
        env.analyzer.requests.clear()
        yield env


@pytest.fixture
async def lookup(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Lookup]:
    """Cases 1-8: server and mongocryptd 8.1."""
    async with prose_setup(monkeypatch, "8.1.0") as env:
        yield env


def _pipeline(local: str, joined: str) -> list[dict[str, Any]]:
    """The pipeline of cases 1, 3, 5, 7 and 9: ``db.<local>`` joins ``db.<joined>``."""
    return [
        {"$match": {local: local}},
        {"$lookup": {"from": joined, "as": "matched",
                     "pipeline": [{"$match": {joined: joined}}, {"$project": {"_id": 0}}]}},
        {"$project": {"_id": 0}},
    ]


def _is_ciphertext(value: Any) -> bool:
    return isinstance(value, Binary) and value.subtype == 6 and value[0] in (1, 2)


async def test_case_1_csfle_joins_no_schema(lookup: Lookup) -> None:
    result = await lookup.aggregate("csfle", _pipeline("csfle", "no_schema"))
    assert result == [{"csfle": "csfle", "matched": [{"no_schema": "no_schema"}]}]
    [sent] = lookup.sent_aggregates()
    assert _is_ciphertext(sent["pipeline"][0]["$match"]["csfle"])
    [request] = [r for r in lookup.analyzer.requests if "aggregate" in r]
    assert set(request["csfleEncryptionSchemas"]) == {"db.csfle", "db.no_schema"}


def test_case_2_qe_joins_no_schema() -> None:
    pytest.skip(f"prose 25 case 2 (db.qe joins db.no_schema) {QE_REASON}")


async def test_case_3_no_schema_joins_csfle(lookup: Lookup) -> None:
    result = await lookup.aggregate("no_schema", _pipeline("no_schema", "csfle"))
    assert result == [{"no_schema": "no_schema", "matched": [{"csfle": "csfle"}]}]
    [sent] = lookup.sent_aggregates()
    assert sent["pipeline"][0]["$match"] == {"no_schema": "no_schema"}
    sub_match = sent["pipeline"][1]["$lookup"]["pipeline"][0]["$match"]
    assert _is_ciphertext(sub_match["csfle"])


def test_case_4_no_schema_joins_qe() -> None:
    pytest.skip(f"prose 25 case 4 (db.no_schema joins db.qe) {QE_REASON}")


async def test_case_5_csfle_joins_csfle2(lookup: Lookup) -> None:
    result = await lookup.aggregate("csfle", _pipeline("csfle", "csfle2"))
    assert result == [{"csfle": "csfle", "matched": [{"csfle2": "csfle2"}]}]
    [sent] = lookup.sent_aggregates()
    assert _is_ciphertext(sent["pipeline"][0]["$match"]["csfle"])
    assert _is_ciphertext(sent["pipeline"][1]["$lookup"]["pipeline"][0]["$match"]["csfle2"])


def test_case_6_qe_joins_qe2() -> None:
    pytest.skip(f"prose 25 case 6 (db.qe joins db.qe2) {QE_REASON}")


async def test_case_7_no_schema_joins_no_schema2(lookup: Lookup) -> None:
    result = await lookup.aggregate("no_schema", _pipeline("no_schema", "no_schema2"))
    assert result == [{"no_schema": "no_schema", "matched": [{"no_schema2": "no_schema2"}]}]
    [sent] = lookup.sent_aggregates()
    assert sent["pipeline"] == _pipeline("no_schema", "no_schema2")


#: Case 8's pipeline: ``db.csfle`` joins the Queryable Encryption collection ``db.qe``.
CASE_8_PIPELINE: list[dict[str, Any]] = [
    {"$match": {"csfle": "qe"}},
    {"$lookup": {"from": "qe", "as": "matched",
                 "pipeline": [{"$match": {"qe": "qe"}}, {"$project": {"_id": 0}}]}},
    {"$project": {"_id": 0}},
]


async def test_case_8_csfle_joins_qe(lookup: Lookup) -> None:
    # mongocryptd 8.1 (< 8.2): libmongocrypt itself refuses mixing encryptedFields and a
    # JSON schema ("... is not supported on mongocryptd/crypt_shared versions below 8.2").
    with pytest.raises(EncryptionError, match="not supported"):
        await lookup.aggregate("csfle", CASE_8_PIPELINE)
    assert lookup.sent_aggregates() == []


async def test_case_8_csfle_joins_qe_with_mongocryptd_8_2(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # mongocryptd 8.2+ and libmongocrypt 1.17+: libmongocrypt sends encryptionInformation
    # (db.qe) with csfleEncryptionSchemas (db.csfle), which mongocryptd refuses because the
    # CSFLE schema encrypts.
    async with prose_setup(monkeypatch, "8.2.0") as env:
        with pytest.raises(EncryptionError, match="Cannot specify both encryptionInformation "
                           "and csfleEncryptionSchemas unless csfleEncryptionSchemas only "
                           "contains non-encryption JSON schema validators"):
            await env.aggregate("csfle", CASE_8_PIPELINE)
        [request] = env.analyzer.requests
        assert set(request["encryptionInformation"]["schema"]) == {"db.qe"}
        assert set(request["csfleEncryptionSchemas"]) == {"db.csfle"}
        assert env.sent_aggregates() == []


async def test_case_9_error_with_mongocryptd_before_8_1(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    # mongocryptd 8.0 (maxWireVersion 25): libmongocrypt asks it isMaster and refuses to send
    # several schemas ("Detected mongocryptd with wire version 25, but need 26. Upgrade...").
    async with prose_setup(monkeypatch, "8.0.0") as env:
        with pytest.raises(EncryptionError, match="Upgrade"):
            await env.aggregate("csfle", _pipeline("csfle", "no_schema"))
        assert env.sent_aggregates() == []
        assert env.analyzer.requests == []


def test_case_10_qe_joins_non_csfle_schema() -> None:
    pytest.skip(f"prose 25 case 10 (db.qe joins db.non_csfle_schema) {QE_REASON}")


# -- the QueryAnalyzer's csfleEncryptionSchemas analysis, beyond the prose cases -----------

KEY = Binary(bytes(16), 4)


def _request(collection: str, pipeline: list[dict[str, Any]],
             schemas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An aggregate markings request as libmongocrypt 1.21 sends it for several schemas."""
    return {"aggregate": collection, "pipeline": pipeline, "cursor": {}, "$db": "db",
            "csfleEncryptionSchemas": {f"db.{name}": {"jsonSchema": schema,
                                                      "isRemoteSchema": True}
                                       for name, schema in schemas.items()}}


SCHEMAS = {"csfle": csfle_schema("csfle", KEY), "csfle2": csfle_schema("csfle2", KEY),
           "no_schema": {}}


def test_lookup_marks_the_joined_collection_and_its_as_field() -> None:
    pipeline = [{"$lookup": {"from": "csfle2", "as": "matched", "pipeline": [
                    {"$match": {"csfle2": "x"}},
                    {"$lookup": {"from": "csfle", "as": "inner",
                                 "pipeline": [{"$match": {"csfle": "y"}}]}}]}},
                {"$match": {"matched.csfle2": "z", "csfle": "w"}}]
    reply = mark_command(_request("no_schema", pipeline, SCHEMAS))
    assert reply["hasEncryptionPlaceholders"] is True
    assert reply["schemaRequiresEncryption"] is True
    result = reply["result"]
    assert "csfleEncryptionSchemas" not in result and "$db" not in result
    lookup = result["pipeline"][0]["$lookup"]
    assert lookup["pipeline"][0]["$match"]["csfle2"].subtype == 6
    assert lookup["pipeline"][1]["$lookup"]["pipeline"][0]["$match"]["csfle"].subtype == 6
    # after the join, matched.csfle2 is encrypted; csfle is not a field of db.no_schema
    assert result["pipeline"][1]["$match"]["matched.csfle2"].subtype == 6
    assert result["pipeline"][1]["$match"]["csfle"] == "w"


def test_lookup_as_replaces_an_encrypted_field() -> None:
    pipeline = [{"$lookup": {"from": "no_schema", "as": "csfle", "pipeline": []}},
                {"$match": {"csfle": "now the joined array"}}]
    reply = mark_command(_request("csfle", pipeline, SCHEMAS))
    assert reply["result"]["pipeline"] == pipeline
    assert reply["hasEncryptionPlaceholders"] is False


@pytest.mark.parametrize(("collection", "lookup", "message"), [
    ("csfle", {"from": "no_schema", "as": "m", "localField": "csfle", "foreignField": "a"},
     "joining on the encrypted field 'csfle'"),
    ("no_schema", {"from": "csfle", "as": "m", "localField": "a", "foreignField": "csfle"},
     "joining on the encrypted field 'csfle.csfle'"),
    ("csfle", {"from": "no_schema", "as": "m", "let": {"v": "$csfle"}, "pipeline": []},
     "refers to the encrypted field 'csfle'"),
    ("csfle", {"from": "elsewhere", "as": "m", "pipeline": []},
     "no schema for this namespace"),
    ("csfle", {"from": "no_schema", "as": "a.b", "pipeline": []}, "'as' path 'a.b'"),
    ("csfle2", {"from": "csfle", "as": "m",
                "pipeline": [{"$match": {"csfle": {"$gt": "a"}}}]}, r"\$gt"),
])
def test_lookup_refusals(collection: str, lookup: dict[str, Any], message: str) -> None:
    with pytest.raises(QueryAnalysisError, match=message):
        mark_command(_request(collection, [{"$lookup": lookup}], SCHEMAS))


def test_csfle_schemas_requests_are_checked() -> None:
    with pytest.raises(QueryAnalysisError, match="no schema for the command's namespace"):
        mark_command(_request("other", [], SCHEMAS))
    with pytest.raises(QueryAnalysisError, match="cannot both be given"):
        mark_command({**_request("csfle", [], SCHEMAS), "jsonSchema": {}})
    with pytest.raises(QueryAnalysisError, match="Queryable Encryption"):
        mark_command({**_request("qe", [], {"non_csfle_schema": NON_CSFLE_SCHEMA}),
                      "encryptionInformation": {"type": 1, "schema": {}}})
    # other stages reading a collection stay refused when the schema encrypts
    with pytest.raises(QueryAnalysisError, match=r"\$unionWith"):
        mark_command(_request("csfle", [{"$unionWith": {"coll": "no_schema"}}], SCHEMAS))


def test_query_analyzer_versions() -> None:
    assert QueryAnalyzer(version="8.1.0").max_wire_version == 26
    assert QueryAnalyzer().max_wire_version == 25
    with pytest.raises(ValueError, match="version"):
        QueryAnalyzer(version="9.9.9")


def test_explain_of_an_aggregate_with_lookup_is_marked() -> None:
    inner = _request("no_schema", [{"$lookup": {"from": "csfle", "as": "m", "pipeline": [
        {"$match": {"csfle": "x"}}]}}], SCHEMAS)
    request = {"explain": {"aggregate": "no_schema", "pipeline": inner["pipeline"],
                           "cursor": {}}, "verbosity": "queryPlanner", "$db": "db",
               "csfleEncryptionSchemas": inner["csfleEncryptionSchemas"]}
    reply = mark_command(request)
    stage = reply["result"]["explain"]["pipeline"][0]["$lookup"]
    assert stage["pipeline"][0]["$match"]["csfle"].subtype == 6
