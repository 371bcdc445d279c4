"""Automatic encryption end to end: a client with AutoEncryptionOpts encrypts its commands
through libmongocrypt, with asyncmongo.testing's QueryAnalyzer as mongocryptd, against the
simulated standalone (which stores what it is sent); replies are decrypted. The markings the
analyzer makes are consumed by libmongocrypt itself, so a wrong marking fails here.

Also the client-side encryption prose tests that apply: bypass auto encryption, external key
vault, views refused, BSON size limits (2 MiB batch split), mongocryptd spawning (with a
stand-in executable) and the error when no query analyzer exists."""

from __future__ import annotations

import importlib.util
import os
import socket
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import AsyncClientEncryption, AutoEncryptionOpts, EncryptionError
from asyncmongo.errors import ConfigurationError
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import QueryAnalyzer, Standalone
from asyncmongo.testing.query_analyzer import QueryAnalysisError, mark_command

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

MASTER_KEY = bytes(range(96))
PROVIDERS = {"local": {"key": MASTER_KEY}}
KEY_VAULT = "keyvault.datakeys"
DET = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
RND = "AEAD_AES_256_CBC_HMAC_SHA_512-Random"


def schema_for(key_id: Binary) -> dict[str, Any]:
    return {
        "bsonType": "object",
        "properties": {
            "ssn": {"encrypt": {"keyId": [key_id], "bsonType": "string", "algorithm": DET}},
            "secret": {"encrypt": {"keyId": [key_id], "bsonType": "string", "algorithm": RND}},
            "by_name": {"encrypt": {"keyId": "/name", "bsonType": "string", "algorithm": RND}},
            "inner": {"bsonType": "object", "properties": {
                "pin": {"encrypt": {"keyId": [key_id], "bsonType": "int", "algorithm": DET}}}},
        },
    }


class Env:
    def __init__(self, server: Standalone, analyzer: QueryAnalyzer, plain: AsyncMongoClient[Any],
                 key_id: Binary) -> None:
        self.server = server
        self.analyzer = analyzer
        self.plain = plain
        self.key_id = key_id
        self.events: list[Any] = []

    def opts(self, **overrides: Any) -> AutoEncryptionOpts:
        settings: dict[str, Any] = {"schema_map": {"db.coll": schema_for(self.key_id)},
                                    **self.analyzer.auto_encryption_options()}
        settings.update(overrides)
        return AutoEncryptionOpts(PROVIDERS, KEY_VAULT, **settings)

    def client(self, opts: AutoEncryptionOpts | None = None, **kwargs: Any
               ) -> AsyncMongoClient[Any]:
        return AsyncMongoClient(self.server.uri, auto_encryption_opts=opts or self.opts(),
                                event_listeners=[self.events.append], **kwargs)

    def started(self, name: str) -> list[dict[str, Any]]:
        return [dict(e.command) for e in self.events
                if isinstance(e, CommandStartedEvent) and e.command_name == name]


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with Standalone() as server, QueryAnalyzer() as analyzer:
        async with AsyncMongoClient(server.uri) as plain:
            async with AsyncClientEncryption(PROVIDERS, KEY_VAULT, plain, CodecOptions()) as ce:
                key_id = await ce.create_data_key("local", key_alt_names=["alice"])
            yield Env(server, analyzer, plain, key_id)


def _is_ciphertext(value: Any) -> bool:
    return isinstance(value, Binary) and value.subtype == 6 and value[0] in (1, 2)


async def test_insert_stores_ciphertext_and_reads_decrypt(env: Env) -> None:
    async with env.client() as client:
        await client.db.coll.insert_one({"_id": 1, "ssn": "457-55-5462", "secret": "s",
                                         "name": "alice", "by_name": "b",
                                         "inner": {"pin": 1234, "note": "n"}, "plain": 7})
        stored = await env.plain.db.coll.find_one({"_id": 1})
        assert stored is not None
        for value in (stored["ssn"], stored["secret"], stored["by_name"],
                      stored["inner"]["pin"]):
            assert _is_ciphertext(value)
        assert stored["inner"]["note"] == "n" and stored["plain"] == 7
        assert await client.db.coll.find_one({"ssn": "457-55-5462"}) == {
            "_id": 1, "ssn": "457-55-5462", "secret": "s", "name": "alice", "by_name": "b",
            "inner": {"pin": 1234, "note": "n"}, "plain": 7}
        assert await client.db.coll.find_one({"inner.pin": 1234}) is not None
        # command monitoring sees only ciphertext (spec, "Interaction with Command Monitoring")
        [insert] = env.started("insert")
        assert _is_ciphertext(insert["documents"][0]["ssn"])
        finds = [c for c in env.started("find") if c["find"] == "coll"]
        assert _is_ciphertext(finds[0]["filter"]["ssn"])
        assert "457-55-5462" not in repr(env.events)


async def test_queries_updates_deletes_and_aggregates_are_encrypted(env: Env) -> None:
    async with env.client() as client:
        coll = client.db.coll
        await coll.insert_many([{"_id": i, "ssn": f"ssn-{i}", "n": i} for i in range(5)])
        assert len(env.started("insert")) == 1
        assert await coll.count_documents({"ssn": {"$in": ["ssn-1", "ssn-2"]}}) == 2
        assert await coll.distinct("n", {"ssn": {"$ne": "ssn-0"}}) == [1, 2, 3, 4]
        cursor = await coll.aggregate([{"$match": {"ssn": "ssn-3"}}, {"$project": {"n": 1}}])
        assert await cursor.to_list() == [{"_id": 3, "n": 3}]
        await coll.update_one({"ssn": "ssn-4"}, {"$set": {"ssn": "new-4", "n": 40}})
        assert await coll.find_one({"ssn": "new-4"}) == {"_id": 4, "ssn": "new-4", "n": 40}
        await coll.replace_one({"_id": 3}, {"ssn": "replaced", "n": 30})
        stored = await env.plain.db.coll.find_one({"_id": 3})
        assert stored is not None and _is_ciphertext(stored["ssn"])
        before = await coll.find_one_and_update({"ssn": "ssn-2"}, {"$set": {"ssn": "fam"}})
        assert before == {"_id": 2, "ssn": "ssn-2", "n": 2}
        assert (await coll.delete_many({"ssn": {"$in": ["fam", "ssn-1"]}})).deleted_count == 2
        assert await coll.count_documents({}) == 3


async def test_refusals_of_the_query_analyzer_surface_as_encryption_errors(env: Env) -> None:
    async with env.client() as client:
        with pytest.raises(EncryptionError, match="randomized encryption algorithm"):
            await client.db.coll.find_one({"secret": "s"})
        with pytest.raises(EncryptionError, match=r"\$gt"):
            await client.db.coll.find_one({"ssn": {"$gt": "a"}})
        with pytest.raises(EncryptionError, match="deterministic"):
            await client.db.coll.insert_one({"ssn": 1.5})
        with pytest.raises(EncryptionError, match=r"\$lookup|multiple schemas"):
            await client.db.coll.aggregate([{"$lookup": {"from": "x", "as": "y",
                                                         "pipeline": []}}])
        assert await env.plain.db.coll.count_documents({}) == 0


async def test_remote_schema_comes_from_list_collections(env: Env) -> None:
    schema = schema_for(env.key_id)
    await env.plain.db.create_collection("coll", validator={"$jsonSchema": schema})
    async with env.client(env.opts(schema_map=None)) as client:
        await client.db.coll.insert_one({"_id": 1, "ssn": "x"})
        [listing] = env.started("listCollections")
        assert listing["filter"] == {"name": "coll"}
    stored = await env.plain.db.coll.find_one()
    assert stored is not None and _is_ciphertext(stored["ssn"])
    [request] = env.analyzer.requests
    assert request["isRemoteSchema"] is True


async def test_commands_without_a_schema_are_sent_as_written(env: Env) -> None:
    async with env.client() as client:
        await client.other.coll.insert_one({"_id": 1, "ssn": "clear"})
        assert (await client.admin.command("ping"))["ok"] == 1
    assert await env.plain.other.coll.find_one() == {"_id": 1, "ssn": "clear"}


async def test_bypass_auto_encryption_sends_plaintext_and_still_decrypts(env: Env) -> None:
    # Prose test "Bypass Auto Encryption": an encrypted value written explicitly is read
    # back decrypted; nothing is sent to the query analyzer.
    async with env.client() as encrypting:
        await encrypting.db.coll.insert_one({"_id": 1, "ssn": "x"})
    before = len(env.analyzer.requests)
    async with env.client(env.opts(bypass_auto_encryption=True,
                                   mongocryptd_uri="mongodb://127.0.0.1:1")) as bypassing:
        await bypassing.db.coll.insert_one({"_id": 2, "ssn": "clear"})
        assert await bypassing.db.coll.find_one({"_id": 1}) == {"_id": 1, "ssn": "x"}
    assert len(env.analyzer.requests) == before
    assert await env.plain.db.coll.find_one({"_id": 2}) == {"_id": 2, "ssn": "clear"}


async def test_external_key_vault(env: Env) -> None:
    # Prose test "External Key Vault": the keys are read through key_vault_client only.
    async with Standalone() as vault_server, AsyncMongoClient(vault_server.uri) as vault:
        async with AsyncClientEncryption(PROVIDERS, KEY_VAULT, vault, CodecOptions()) as ce:
            key_id = await ce.create_data_key("local")
        opts = env.opts(key_vault_client=vault, schema_map={"db.coll": schema_for(key_id)})
        async with env.client(opts) as client:
            await client.db.coll.insert_one({"_id": 1, "ssn": "x"})
            assert await client.db.coll.find_one() == {"_id": 1, "ssn": "x"}
        assert env.started("find") == [c for c in env.started("find") if c["find"] == "coll"]
        # the encrypting deployment's key vault key does not encrypt for the other one
        opts = env.opts(key_vault_client=vault)
        async with env.client(opts) as client:
            with pytest.raises(EncryptionError, match="not all keys requested were satisfied"):
                await client.db.coll.insert_one({"_id": 2, "ssn": "y"})


async def test_views_are_refused(env: Env) -> None:
    # Prose test "Views Are Prohibited".
    await env.plain.db.create_collection("view", viewOn="coll", pipeline=[])
    async with env.client(env.opts(schema_map=None)) as client:
        with pytest.raises(EncryptionError, match="cannot auto encrypt a view"):
            await client.db.view.insert_one({"_id": 1})


async def test_write_batches_split_at_2_mib_before_encryption(env: Env) -> None:
    # Prose test "BSON Size Limits and Batch Splitting" (the parts without a schema from
    # the limits files): 2 MiB - 2000 bytes documents go one per insert; a document larger
    # than 2 MiB (but under maxBsonObjectSize) is still sent.
    async with env.client() as client:
        big = "a" * (2097152 - 2000)
        await client.db.coll.insert_many([{"_id": 1, "big": big}, {"_id": 2, "big": big}])
        assert len(env.started("insert")) == 2
        env.events.clear()
        small = "a" * 1000
        await client.db.coll.insert_many([{"_id": 10 + i, "s": small} for i in range(4)])
        assert len(env.started("insert")) == 1
        await client.db.coll.insert_one({"_id": 3, "big": "a" * (4 * 1024 * 1024)})
    assert await env.plain.db.coll.count_documents({}) == 7


async def test_internal_client_keeps_a_one_connection_pool_from_deadlocking(env: Env) -> None:
    async with env.client(maxPoolSize=1) as client:
        await client.db.coll.insert_one({"_id": 1, "ssn": "x"})
        assert await client.db.coll.find_one({"ssn": "x"}) == {"_id": 1, "ssn": "x"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_mongocryptd_is_spawned_with_idle_shutdown(env: Env, tmp_path: Path) -> None:
    # A stand-in mongocryptd: records its arguments, then runs the query analyzer.
    port = _free_port()
    args_file = tmp_path / "args"
    script = tmp_path / "mongocryptd"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"open({str(args_file)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
        "from asyncmongo.testing.query_analyzer import main\n"
        "main(sys.argv[1:])\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    opts = env.opts(mongocryptd_uri=f"mongodb://127.0.0.1:{port}", mongocryptd_bypass_spawn=False,
                    mongocryptd_spawn_path=str(script),
                    mongocryptd_spawn_args=[f"--port={port}"])
    os.environ["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), *sys.path])
    async with env.client(opts) as client:
        await client.db.coll.insert_one({"_id": 1, "ssn": "x"})
        processes = client._decrypter.spawned_processes  # type: ignore[union-attr]
        assert len(processes) == 1
        for process in processes:
            process.terminate()
            process.wait(10)
    assert args_file.read_text() == f"--port={port} --idleShutdownTimeoutSecs=60"
    stored = await env.plain.db.coll.find_one()
    assert stored is not None and _is_ciphertext(stored["ssn"])


def test_spawn_arguments_keep_a_given_idle_shutdown() -> None:
    given = AutoEncryptionOpts(PROVIDERS, KEY_VAULT,
                               mongocryptd_spawn_args=["--idleShutdownTimeoutSecs", "5"])
    assert given.spawn_arguments() == ["--idleShutdownTimeoutSecs", "5"]
    assert AutoEncryptionOpts(PROVIDERS, KEY_VAULT).spawn_arguments() == [
        "--idleShutdownTimeoutSecs=60"]


async def test_without_crypt_shared_or_mongocryptd_encryption_fails_with_the_reason(
        env: Env) -> None:
    opts = env.opts(mongocryptd_bypass_spawn=False,
                    mongocryptd_spawn_path="/nonexistent/mongocryptd")
    async with env.client(opts) as client:
        with pytest.raises(EncryptionError, match="could not be spawned") as info:
            await client.db.coll.insert_one({"ssn": "x"})
        assert "crypt_shared" in str(info.value)
    assert await env.plain.db.coll.count_documents({}) == 0


def test_crypt_shared_required_but_missing_is_refused() -> None:
    opts = AutoEncryptionOpts(PROVIDERS, KEY_VAULT, crypt_shared_lib_required=True,
                              crypt_shared_lib_path="/nonexistent/mongo_crypt_v1.so")
    with pytest.raises(ConfigurationError):
        AsyncMongoClient("mongodb://127.0.0.1:1", auto_encryption_opts=opts)


async def test_bypass_query_analysis_needs_no_analyzer(env: Env) -> None:
    opts = env.opts(bypass_query_analysis=True, mongocryptd_uri="mongodb://127.0.0.1:1",
                    mongocryptd_bypass_spawn=False, mongocryptd_spawn_path="/nonexistent")
    async with env.client(opts) as client:
        await client.db.other.insert_one({"_id": 1, "v": "clear"})
    assert await env.plain.db.other.find_one() == {"_id": 1, "v": "clear"}


def test_marking_format() -> None:
    key = Binary(bytes(16), 4)
    schema = {"properties": {"a": {"encrypt": {"keyId": [key], "algorithm": DET}}}}
    reply = mark_command({"find": "c", "filter": {"a": "v", "b": 1}, "jsonSchema": schema,
                          "isRemoteSchema": False, "$db": "db"})
    assert reply["hasEncryptionPlaceholders"] and reply["schemaRequiresEncryption"]
    result = reply["result"]
    assert set(result) == {"find", "filter"} and result["filter"]["b"] == 1
    marking = result["filter"]["a"]
    assert marking.subtype == 6 and marking[0] == 0
    from asyncmongo.bson import decode
    assert decode(bytes(marking[1:])) == {"a": 1, "ki": key, "v": "v"}
    empty = mark_command({"find": "c", "filter": {"a": 1}, "jsonSchema": {}})
    assert not empty["hasEncryptionPlaceholders"] and not empty["schemaRequiresEncryption"]
    with pytest.raises(QueryAnalysisError):
        mark_command({"find": "c", "filter": {"a": {"$regex": "x"}}, "jsonSchema": schema})
