"""Error labels a failCommand fail point attaches, as mongod attaches them: the transactions
spec's error-labels cases (spec_tests/data/transactions/unified/error-labels.json) at the
server end, where the reply leaves the simulator, before any driver adds its own labels."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.bson import Int64
from asyncmongo.testing import SimServer
from asyncmongo.testing.failpoint import FailCommand, server_error_labels
from tests.testing.raw_client import RawClient

TRANSIENT = "TransientTransactionError"
RETRYABLE = "RetryableWriteError"
SESSION = {"lsid": {"id": 1}, "txnNumber": Int64(1)}
IN_TXN = {**SESSION, "autocommit": False}


def _command(name: str, **fields: Any) -> dict[str, Any]:
    return {name: "c" if name not in ("commitTransaction", "abortTransaction") else 1,
            **fields}


def _error_labels(name: str, code: int, **fields: Any) -> list[str]:
    fail = FailCommand.from_document({"failCommands": [name], "errorCode": code})
    return list(fail.error_reply(_command(name, **fields)).get("errorLabels", []))


@pytest.mark.parametrize(("name", "code"), [
    ("insert", 112),      # WriteConflict errors contain transient label
    ("insert", 251),      # NoSuchTransaction errors contain transient label
    ("insert", 10107),    # NotWritablePrimary errors contain transient label
    ("find", 112),
    ("commitTransaction", 251),  # NoSuchTransaction errors on commit contain transient label
    ("abortTransaction", 251),
    ("commitTransaction", 112),
    ("insert", 24),       # LockTimeout
    ("aggregate", 246),   # SnapshotUnavailable
])
def test_transient_codes_in_a_transaction_are_labelled(name: str, code: int) -> None:
    assert _error_labels(name, code, **IN_TXN) == [TRANSIENT]


@pytest.mark.parametrize(("name", "code", "fields", "expected"), [
    ("insert", 112, SESSION, []),                 # not in a transaction: no transient label
    ("insert", 251, SESSION, []),
    ("insert", 11000, IN_TXN, []),                # DuplicateKey is never transient
    ("aggregate", 50, IN_TXN, []),                # MaxTimeMSExpired inside a transaction
    ("commitTransaction", 50, IN_TXN, []),        # the driver adds UnknownTransactionCommitResult
    ("commitTransaction", 10107, IN_TXN, [RETRYABLE]),  # retryable on commit, never transient
    ("commitTransaction", 91, IN_TXN, [RETRYABLE]),
])
def test_other_codes_are_not_transient(name: str, code: int, fields: dict[str, Any],
                                       expected: list[str]) -> None:
    assert _error_labels(name, code, **fields) == expected


def test_retryable_write_outside_a_transaction_keeps_retryable_label() -> None:
    assert _error_labels("insert", 91, **SESSION) == [RETRYABLE]
    assert _error_labels("insert", 112, **SESSION) == []
    assert _error_labels("insert", 91) == []          # no txnNumber: not a retryable write


def test_no_such_transaction_on_commit_with_write_concern_error_is_not_transient() -> None:
    commit = _command("commitTransaction", **IN_TXN)
    assert server_error_labels(commit, 251) == [TRANSIENT]
    assert server_error_labels(commit, 251, wc_code=64) == []


def test_write_concern_errors_in_a_transaction_are_never_transient() -> None:
    # "do not add RetryableWriteError label to writeConcernError ShutdownInProgress that
    # occurs within transaction"; WriteConcernTimeout on commit gets none from the server.
    for name, code, expected in (("insert", 91, []), ("commitTransaction", 64, []),
                                 ("commitTransaction", 91, [RETRYABLE])):
        fail = FailCommand.from_document({"failCommands": [name],
                                          "writeConcernError": {"code": code, "errmsg": "x"}})
        reply = fail.add_write_concern_error({"ok": 1.0}, _command(name, **IN_TXN))
        assert reply.get("errorLabels", []) == expected, (name, code)


def test_given_error_labels_replace_the_servers() -> None:
    fail = FailCommand.from_document({"failCommands": ["insert"], "errorCode": 112,
                                      "errorLabels": ["Custom"]})
    assert fail.error_reply(_command("insert", **IN_TXN))["errorLabels"] == ["Custom"]
    none = FailCommand.from_document({"failCommands": ["insert"], "errorCode": 112,
                                      "errorLabels": []})
    assert "errorLabels" not in none.error_reply(_command("insert", **IN_TXN))


@pytest.mark.timeout(10)
async def test_simulator_labels_a_fail_point_error_inside_a_transaction() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            with server.fail_point({"times": 2}, failCommands=["insert"], errorCode=112):
                in_txn = await client.command({"insert": "c", "documents": [{"_id": 1}],
                                               "startTransaction": True, **IN_TXN,
                                               "$db": "db"})
                plain = await client.command({"insert": "c", "documents": [{"_id": 1}],
                                              "$db": "db"})
            assert (in_txn["code"], in_txn["errorLabels"]) == (112, [TRANSIENT])
            assert plain["code"] == 112 and "errorLabels" not in plain
        finally:
            await client.close()


def test_error_code_names_the_transaction_suites_match() -> None:
    for code, name in ((11601, "Interrupted"), (246, "SnapshotUnavailable"),
                       (267, "PreparedTransactionInProgress")):
        fail = FailCommand.from_document({"failCommands": ["insert"], "errorCode": code})
        assert fail.error_reply(_command("insert"))["codeName"] == name
