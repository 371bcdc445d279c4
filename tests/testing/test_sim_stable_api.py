"""The simulator's Stable API checks (asyncmongo.testing.stable_api) as mongod 8.0 makes them:
APIVersionError / APIStrictError / APIDeprecationError, apiStrict without apiVersion,
requireApiVersion and acceptApiVersion2 through setParameter/getParameter, and the
testVersion2 / testDeprecation* test commands."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.testing import SimServer
from asyncmongo.testing.stable_api import DEFAULT_PARAMETERS, ApiParameterMemory, api_refusal
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(15)

V1_STRICT = {"apiVersion": "1", "apiStrict": True}


def _code(reply: dict[str, Any] | None) -> tuple[int, str] | None:
    return None if reply is None else (reply["code"], reply["codeName"])


def test_api_version_must_be_known() -> None:
    params = {**DEFAULT_PARAMETERS, "acceptApiVersion2": False}
    assert _code(api_refusal("ping", {"ping": 1, "apiVersion": "2"}, params)) == (
        322, "APIVersionError")
    assert _code(api_refusal("ping", {"ping": 1, "apiVersion": 1}, params)) == (
        322, "APIVersionError")
    assert api_refusal("ping", {"ping": 1, "apiVersion": "1"}, params) is None
    assert api_refusal("ping", {"ping": 1, "apiVersion": "2"}, DEFAULT_PARAMETERS) is None


def test_strict_or_deprecation_flags_need_an_api_version() -> None:
    for flag in ("apiStrict", "apiDeprecationErrors"):
        reply = api_refusal("ping", {"ping": 1, flag: True}, DEFAULT_PARAMETERS)
        assert _code(reply) == (4886600, "Location4886600")


def test_strict_refuses_commands_outside_version_1() -> None:
    reply = api_refusal("distinct", {"distinct": "c", "key": "x", **V1_STRICT},
                        DEFAULT_PARAMETERS)
    assert _code(reply) == (323, "APIStrictError")
    assert reply is not None and "command distinct is not in API Version 1" in reply["errmsg"]
    for name in ("find", "aggregate", "insert", "count", "hello", "endSessions", "getMore"):
        assert api_refusal(name, {name: "c", **V1_STRICT}, DEFAULT_PARAMETERS) is None
    # Without apiStrict the same command runs.
    assert api_refusal("distinct", {"distinct": "c", "apiVersion": "1"},
                       DEFAULT_PARAMETERS) is None


def test_strict_refuses_unstable_fields_and_stages() -> None:
    find = {"find": "c", "returnKey": True, **V1_STRICT}
    assert _code(api_refusal("find", find, DEFAULT_PARAMETERS)) == (323, "APIStrictError")
    pipeline = [{"$listLocalSessions": {}}, {"$limit": 1}]
    reply = api_refusal("aggregate", {"aggregate": 1, "pipeline": pipeline, **V1_STRICT},
                        DEFAULT_PARAMETERS)
    assert _code(reply) == (323, "APIStrictError")
    assert reply is not None and "$listLocalSessions" in reply["errmsg"]
    fine = [{"$match": {}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]
    assert api_refusal("aggregate", {"aggregate": "c", "pipeline": fine, **V1_STRICT},
                       DEFAULT_PARAMETERS) is None


def test_deprecation_errors_only_for_deprecated_commands() -> None:
    command = {"testDeprecationInVersion2": 1, "apiVersion": "2", "apiDeprecationErrors": True}
    reply = api_refusal("testDeprecationInVersion2", command, DEFAULT_PARAMETERS)
    assert _code(reply) == (324, "APIDeprecationError")
    assert reply is not None and "is deprecated in API Version 2" in reply["errmsg"]
    in_v1 = {**command, "apiVersion": "1"}
    assert api_refusal("testDeprecationInVersion2", in_v1, DEFAULT_PARAMETERS) is None
    assert api_refusal("testDeprecation", {"testDeprecation": 1, "apiVersion": "1",
                                           "apiDeprecationErrors": True},
                       DEFAULT_PARAMETERS) is not None


async def test_server_applies_the_checks_and_test_commands() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            reply = await client.command({"testVersion2": 1, "$db": "db", **V1_STRICT})
            assert (reply["ok"], reply["codeName"]) == (0.0, "APIStrictError")
            reply = await client.command({"testVersion2": 1, "apiVersion": "2", "$db": "db"})
            assert reply["ok"] == 1.0
            reply = await client.command({"ping": 1, "apiVersion": "nope", "$db": "db"})
            assert reply["codeName"] == "APIVersionError"
        finally:
            await client.close()


async def test_require_api_version_and_parameters() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            everything = await client.command({"getParameter": "*", "$db": "admin"})
            assert everything["requireApiVersion"] is False
            assert everything["acceptApiVersion2"] is True
            set_reply = await client.command({"setParameter": 1, "requireApiVersion": True,
                                              "$db": "admin"})
            assert set_reply == {"was": False, "ok": 1.0}
            refused = await client.command({"ping": 1, "$db": "db"})
            assert (refused["ok"], refused["code"]) == (0.0, 498870)
            hello = await client.command({"hello": 1, "$db": "admin"})
            assert hello["ok"] == 1.0  # the handshake is exempt
            one = await client.command({"getParameter": 1, "requireApiVersion": 1,
                                        "apiVersion": "1", "$db": "admin"})
            assert one == {"requireApiVersion": True, "ok": 1.0}
            await client.command({"setParameter": 1, "requireApiVersion": False,
                                  "apiVersion": "1", "$db": "admin"})
            assert (await client.command({"ping": 1, "$db": "db"}))["ok"] == 1.0
            unknown = await client.command({"getParameter": 1, "noSuchThing": 1,
                                            "$db": "admin"})
            assert unknown["codeName"] == "InvalidOptions"
            not_admin = await client.command({"getParameter": "*", "$db": "db"})
            assert not_admin["codeName"] == "Unauthorized"
            fixed = await client.command({"setParameter": 1, "enableTestCommands": False,
                                          "$db": "admin"})
            assert fixed["ok"] == 0.0
        finally:
            await client.close()


async def test_hello_api_parameters_are_checked() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            strict_hello = await client.command({"hello": 1, "$db": "admin", **V1_STRICT})
            assert strict_hello["ok"] == 1.0
            strict_legacy = await client.command({"isMaster": 1, "$db": "admin", **V1_STRICT})
            assert strict_legacy["codeName"] == "APIStrictError"
            unknown = await client.command({"hello": 1, "apiVersion": "9", "$db": "admin"})
            assert unknown["codeName"] == "APIVersionError"
        finally:
            await client.close()


def test_get_more_must_repeat_the_cursor_api_parameters() -> None:
    memory = ApiParameterMemory()
    find = {"find": "c", "apiVersion": "1", "apiStrict": True}
    memory.record("find", find, {"ok": 1.0, "cursor": {"id": 42, "firstBatch": []}}, None)
    same = {"getMore": 42, "collection": "c", "apiVersion": "1", "apiStrict": True}
    assert memory.refusal("getMore", same, None) is None
    bare = {"getMore": 42, "collection": "c"}
    assert _code(memory.refusal("getMore", bare, None)) == (325, "APIMismatchError")
    memory.record("killCursors", {"killCursors": "c", "cursors": [42]}, {"ok": 1.0}, None)
    assert memory.refusal("getMore", bare, None) is None  # forgotten with the cursor


def test_transaction_commands_must_repeat_the_first_command_parameters() -> None:
    memory = ApiParameterMemory()
    first = {"insert": "c", "txnNumber": 1, "autocommit": False, "startTransaction": True,
             "apiVersion": "1"}
    memory.record("insert", first, {"ok": 1.0, "n": 1}, "session")
    later = {"insert": "c", "txnNumber": 1, "autocommit": False}
    assert _code(memory.refusal("insert", later, "session")) == (325, "APIMismatchError")
    commit = {"commitTransaction": 1, "txnNumber": 1, "autocommit": False, "apiVersion": "1"}
    assert memory.refusal("commitTransaction", commit, "session") is None
    assert memory.refusal("insert", later, "another session") is None
    assert memory.refusal("insert", {**later, "txnNumber": 2}, "session") is None
