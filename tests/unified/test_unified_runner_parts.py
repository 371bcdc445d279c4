"""The unified runner's pure parts: error expectations, events, logs, arguments, results."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.bson import Int64
from asyncmongo.errors import (
    AutoReconnect,
    BulkWriteError,
    ConfigurationError,
    ExecutionTimeout,
    NotPrimaryError,
    OperationFailure,
)
from spec_tests.unified.errors import Unsupported
from spec_tests.unified.events import ClientObserver, check_expected_events, event_name
from spec_tests.unified.expect_error import check_error, is_client_error
from spec_tests.unified.gaps import (
    API_NOT_BUILT,
    KNOWN_DRIVER_GAPS,
    SIMULATOR_GAPS,
    known_gap_reason,
    simulator_gap_reason,
)
from spec_tests.unified.logs import LogCapture, LogEntry, check_log_messages, messages_for
from spec_tests.unified.matcher import MatchError, exactly_equal
from spec_tests.unified.operations import snake_case
from spec_tests.unified.results import bulk_write_result_document
from spec_tests.unified.suite import DATA


def _failure(code: int, name: str = "X", labels: tuple[str, ...] = ()) -> OperationFailure:
    reply = {"ok": 0, "code": code, "codeName": name, "errmsg": f"boom {name}",
             "errorLabels": list(labels)}
    return OperationFailure(f"boom {name}", code, reply)


def test_client_and_server_errors() -> None:
    assert is_client_error(ConfigurationError("bad"))
    assert is_client_error(AutoReconnect("network"))
    assert not is_client_error(_failure(2))
    assert not is_client_error(NotPrimaryError("not primary", {"code": 10107, "ok": 0}))


def test_error_expectations() -> None:
    exc = _failure(112, "WriteConflict", ("TransientTransactionError",))
    check_error({"isError": True, "isClientError": False, "errorCode": 112,
                 "errorCodeName": "writeconflict", "errorContains": "BOOM",
                 "errorLabelsContain": ["TransientTransactionError"],
                 "errorLabelsOmit": ["RetryableWriteError"],
                 "errorResponse": {"code": 112}}, exc, None)
    for wrong in ({"errorCode": 1}, {"isClientError": True}, {"errorContains": "nope"},
                  {"errorLabelsOmit": ["TransientTransactionError"]},
                  {"errorResponse": {"code": 1}}, {"isTimeoutError": True}):
        with pytest.raises(MatchError):
            check_error(wrong, exc, None)
    check_error({"isTimeoutError": True}, ExecutionTimeout("slow", 50, {}), None)


def test_not_primary_error_code_comes_from_its_reply() -> None:
    exc = NotPrimaryError("x", {"ok": 0, "code": 11600, "codeName": "InterruptedAtShutdown"})
    check_error({"errorCode": 11600, "errorCodeName": "InterruptedAtShutdown"}, exc, None)


def test_bulk_write_error_codes_and_partial_result() -> None:
    exc = BulkWriteError({"writeErrors": [{"index": 1, "code": 11000, "errmsg": "dup key"}],
                          "nInserted": 1, "upserted": []})
    check_error({"errorCode": 11000, "errorContains": "dup key",
                 "expectResult": {"insertedCount": 1, "deletedCount": 0}}, exc, None)
    assert bulk_write_result_document({"nUpserted": 1, "upserted": [{"index": 0, "_id": 5}]})[
        "upsertedIds"] == {"0": 5}


def test_runner_bugs_are_not_expected_errors() -> None:
    with pytest.raises(AttributeError):
        check_error({"isError": True}, AttributeError("runner bug"), None)


@dataclass(frozen=True)
class CommandStartedEvent:
    command_name: str
    request_id: int
    command: dict[str, Any]
    database_name: str = "db"


@dataclass(frozen=True)
class CommandSucceededEvent:
    command_name: str
    request_id: int
    reply: dict[str, Any]
    database_name: str = "db"


@dataclass(frozen=True)
class ConnectionCheckedOutEvent:
    connection_id: int


@dataclass(frozen=True)
class ConnectionCheckedInEvent:
    connection_id: int


def test_observer_filters_and_counts() -> None:
    observer = ClientObserver(observe=["commandStartedEvent", "commandSucceededEvent"],
                              ignore_commands=["ping"])
    stored: list[dict[str, Any]] = []
    observer.store_into(["connectionCheckedOutEvent"], stored)
    observer(CommandStartedEvent("configureFailPoint", 1, {"configureFailPoint": "x"}))
    observer(CommandSucceededEvent("configureFailPoint", 1, {"ok": 1}))
    observer(CommandStartedEvent("ping", 2, {"ping": 1}))
    observer(CommandStartedEvent("saslStart", 3, {}))
    observer(CommandSucceededEvent("saslStart", 3, {}))
    observer(CommandStartedEvent("hello", 4, {}))  # redacted: speculativeAuthenticate
    observer(CommandStartedEvent("find", 5, {"find": "c"}))
    observer(ConnectionCheckedOutEvent(1))
    assert [event_name(e) for e in observer.events] == ["commandStartedEvent"]
    assert observer.checked_out == 1
    observer(ConnectionCheckedInEvent(1))
    assert observer.checked_out == 0
    assert stored[0]["name"] == "connectionCheckedOutEvent" and stored[0]["connectionId"] == 1
    check_expected_events([{"commandStartedEvent": {"command": {"find": "c"},
                                                    "commandName": "find"}}],
                          observer.events, None, ignore_extra=False)
    with pytest.raises(MatchError, match="expected commandSucceededEvent"):
        check_expected_events([{"commandSucceededEvent": {}}], observer.events, None,
                              ignore_extra=False)


def test_log_capture_and_expectations() -> None:
    @dataclass(frozen=True)
    class Message:
        fields: dict[str, Any]

    with LogCapture() as capture:
        logging.getLogger("asyncmongo.command").debug(Message({"message": "Command started"}))
        logging.getLogger("asyncmongo.topology").debug(
            Message({"message": "Starting topology monitoring", "topologyId": "other"}))
        logging.getLogger("asyncmongo.command").debug("plain text is not structured")
    assert capture.entries == [LogEntry("command", "debug", {"message": "Command started"}),
                               LogEntry("topology", "debug", {
                                   "message": "Starting topology monitoring",
                                   "topologyId": "other"})]
    kept = messages_for(capture.entries, {"command": "debug", "topology": "debug"}, {"mine"},
                        only_observer=True)
    assert [e.component for e in kept] == ["command"]
    assert messages_for(capture.entries, {"command": "info"}, set(), only_observer=True) == []
    with pytest.raises(Unsupported):
        messages_for(capture.entries, {"command": "debug"}, set(), only_observer=False)
    check_log_messages({"client": "c", "messages": [
        {"level": "debug", "component": "command", "data": {"message": "Command started"}}]},
        kept, None)
    with pytest.raises(MatchError):
        check_log_messages({"client": "c", "messages": []}, kept, None)


def test_snake_case() -> None:
    assert snake_case("maxTimeMS") == "max_time_ms"
    assert snake_case("batchSize") == "batch_size"
    assert snake_case("arrayFilters") == "array_filters"
    assert snake_case("let") == "let"


def test_exactly_equal() -> None:
    assert exactly_equal({"a": 1, "b": [1, {"c": 2}]}, {"b": [1, {"c": 2}], "a": 1})
    assert not exactly_equal({"a": 1}, {"a": 1.0})
    assert not exactly_equal({"a": 1}, {"a": Int64(1)})
    assert not exactly_equal({"a": 1}, {"a": 1, "b": 2})


def test_simulator_gaps() -> None:
    unknown = OperationFailure("no such command: 'listSearchIndexes'", 59, {
        "ok": 0, "code": 59, "errmsg": "no such command: 'listSearchIndexes'"})
    assert simulator_gap_reason(unknown, '{"name": "listSearchIndexes"}') is not None
    # a command the test never names is a driver bug (a wrong command), not a gap
    assert simulator_gap_reason(unknown, '{"name": "find"}') is None
    assert simulator_gap_reason(_failure(11000), "") is None
    unlisted = ("crud/unified/find.json", "any test not in the lists")
    assert known_gap_reason(unlisted, simulated=True) is None


def test_known_gaps_name_existing_tests_with_specific_reasons() -> None:
    """Every listed gap is one test of one vendored file (no patterns, no whole files), and
    a simulator gap is excused against the simulator only."""
    descriptions: dict[str, set[str]] = {}
    for key, reason in [*SIMULATOR_GAPS.items(), *KNOWN_DRIVER_GAPS.items()]:
        path, description = key
        if path not in descriptions:
            tests = json.loads((DATA / path).read_text())["tests"]
            descriptions[path] = {str(test["description"]) for test in tests}
        assert description in descriptions[path], key
        assert len(reason) > 40, key
    for key in SIMULATOR_GAPS:
        assert known_gap_reason(key, simulated=False) is None
        assert known_gap_reason(key, simulated=True) is not None
    for key in KNOWN_DRIVER_GAPS:
        assert "#" in KNOWN_DRIVER_GAPS[key], f"{key}: name the issue"
        assert known_gap_reason(key, simulated=False) is not None


def test_every_invalid_file_is_rejected_for_a_reason_on_its_name() -> None:
    from spec_tests.unified.schema import InvalidTestFile, load_unified_file

    folder = Path(__file__).resolve().parents[2] / "spec_tests/data/unified-test-format/invalid"
    path = folder / "entity-client-observeEvents-enum.json"
    with pytest.raises(InvalidTestFile, match="observeEvents"):
        load_unified_file(path)


def test_api_not_built_entries_are_really_missing() -> None:
    """An API_NOT_BUILT entry whose method or parameter now exists is stale: remove it."""
    import inspect

    from asyncmongo.client import AsyncMongoClient
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.database import AsyncDatabase

    classes = {cls.__name__: cls for cls in (AsyncCollection, AsyncDatabase, AsyncMongoClient)}
    for what, reason in API_NOT_BUILT.items():
        assert "#" in reason, f"{what}: name the issue"
        owner, _, rest = what.partition(".")
        method, _, params = rest.partition("(")
        function = getattr(classes[owner], method, None)
        if function is None or not params:
            assert function is None, f"{what} exists now"
            continue
        accepted = inspect.signature(function).parameters
        for name in params.rstrip(")").replace("=...", "").split(", "):
            assert name not in accepted, f"{what}: {name} is accepted now"


def test_client_encryption_providers_resolve_placeholders() -> None:
    """clientEncryption kmsProviders: local placeholders get LOCAL_MASTERKEY, explicit
    values (aws: {} too) are kept as given, and providers with placeholder credentials this
    environment lacks are left out with a reason the operations needing them skip with."""
    from spec_tests.unified.encryption import (
        LOCAL_MASTER_KEY,
        ClientEncryptionEntity,
        client_encryption_providers,
    )

    placeholder = {"$$placeholder": 1}
    providers, unavailable = client_encryption_providers({
        "local": {"key": placeholder},
        "local:name2": {"key": "explicit"},
        "aws": {},
        "aws:name1": {"accessKeyId": placeholder, "secretAccessKey": placeholder},
    })
    assert providers == {"local": {"key": LOCAL_MASTER_KEY},
                         "local:name2": {"key": "explicit"}, "aws": {}}
    assert set(unavailable) == {"aws:name1"}
    entity = ClientEncryptionEntity(object(), unavailable)
    entity.check_provider("local")
    entity.check_provider(None)
    with pytest.raises(Unsupported, match="aws:name1"):
        entity.check_provider("aws:name1")
    with pytest.raises(Unsupported, match="only KMS providers"):
        client_encryption_providers({"gcp": {"email": placeholder}})
