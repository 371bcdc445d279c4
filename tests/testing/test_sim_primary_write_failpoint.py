"""onPrimaryTransactionalWrite: counted per statement of a retryable write, never for other
commands; parsing of its data (asyncmongo/testing/primary_write_failpoint.py)."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import configure_failpoint
from asyncmongo.testing.failpoint import FailPointState
from asyncmongo.testing.primary_write_failpoint import (
    PrimaryWriteFault,
    PrimaryWritePoint,
    evaluate,
    statement_count,
)

LSID = {"id": b"x" * 16}


def _point(mode: Any, data: dict[str, Any] | None = None) -> FailPointState:
    points: dict[str, FailPointState] = {}
    configure_failpoint.configure(points, {"configureFailPoint": "onPrimaryTransactionalWrite",
                                           "mode": mode, "data": data or {}})
    return points["onPrimaryTransactionalWrite"]


def _insert(n: int, **extra: Any) -> dict[str, Any]:
    return {"insert": "c", "documents": [{"_id": i} for i in range(n)], "lsid": LSID,
            "txnNumber": 1, **extra}


def test_defaults_close_the_connection_and_apply_the_write() -> None:
    point = _point({"times": 1})
    assert isinstance(point, PrimaryWritePoint)
    assert point.fault == PrimaryWriteFault(close_connection=True)
    verdict = evaluate(point, _insert(1))
    assert verdict is not None and verdict.index == 0 and verdict.applies_write
    assert evaluate(point, _insert(1)) is None  # times: 1 used up


def test_skip_counts_statements_not_commands() -> None:
    point = _point({"skip": 2}, {"failBeforeCommitExceptionCode": 1})
    assert evaluate(point, _insert(1)) is None
    verdict = evaluate(point, {"update": "c", "updates": [{}, {}], "lsid": LSID,
                               "txnNumber": 2})
    assert verdict is not None and verdict.index == 1 and not verdict.applies_write


def test_only_retryable_writes_count() -> None:
    point = _point("alwaysOn")
    assert evaluate(point, {"insert": "c", "documents": [{}]}) is None  # no txnNumber
    assert evaluate(point, _insert(1, autocommit=False)) is None  # a transaction's write
    assert evaluate(point, {"find": "c", "lsid": LSID, "txnNumber": 1}) is None
    assert evaluate(point, {"findAndModify": "c", "lsid": LSID, "txnNumber": 3}) is not None


def test_statement_counts() -> None:
    assert statement_count(_insert(3)) == 3
    assert statement_count({"delete": "c", "deletes": [{}, {}]}) == 2
    assert statement_count({"findAndModify": "c"}) == 1
    assert statement_count({"bulkWrite": 1, "ops": [{}]}) == 1
    assert statement_count({"insert": "c", "documents": "bad"}) == 0


def test_bad_data_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        _point("alwaysOn", {"failBeforeCommitExceptionCode": "x"})
    with pytest.raises(ConfigurationError):
        _point({"sometimes": 1})


def test_off_turns_it_off() -> None:
    point = _point("off")
    assert evaluate(point, _insert(1)) is None
