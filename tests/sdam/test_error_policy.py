"""The SDAM error verdicts and the code-table predicates (asyncmongo.core.error_policy)."""

from __future__ import annotations

import pytest

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.error_policy import (
    ApplicationError,
    ErrorKind,
    ErrorPhase,
    MonitorError,
    application_error_verdict,
    is_not_writable_primary,
    is_recovering,
    is_retryable_read_code,
    is_retryable_write_code,
    is_shutdown,
    is_state_change_error,
    monitor_error_verdict,
)
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_version import TopologyVersion
from asyncmongo.core.sdam.types import ServerType, TopologyType

A = ("a", 27017)
PID = ObjectId("000000000000000000000001")
PRIMARY = ServerDescription(
    A, ServerType.RS_PRIMARY, set_name="rs", topology_version=TopologyVersion(PID, 5)
)
RS = TopologyType.REPLICA_SET_WITH_PRIMARY
LB = TopologyType.LOAD_BALANCED


def command(code: int | None, message: str = "", counter: int | None = None) -> ApplicationError:
    reply: dict[str, object] = {"ok": 0, "errmsg": message}
    if code is not None:
        reply["code"] = code
    if counter is not None:
        reply["topologyVersion"] = {"processId": PID, "counter": counter}
    error = ApplicationError.from_command_reply(reply, generation=0)
    assert error is not None
    return error


def network(
    kind: ErrorKind,
    phase: ErrorPhase,
    labels: frozenset[str] = frozenset(),
    service_id: ObjectId | None = None,
) -> ApplicationError:
    return ApplicationError(
        kind, phase, generation=0, message="boom", labels=labels, service_id=service_id
    )


# -- predicates --------------------------------------------------------------------------


@pytest.mark.parametrize("code", [11600, 11602, 13436, 189, 91])
def test_recovering_codes(code: int) -> None:
    assert is_recovering(code) and is_state_change_error(code)
    assert not is_not_writable_primary(code)


@pytest.mark.parametrize("code", [10107, 13435, 10058])
def test_not_writable_primary_codes(code: int) -> None:
    assert is_not_writable_primary(code) and is_state_change_error(code)


def test_messages_are_used_only_without_a_code() -> None:
    assert is_recovering(None, "node is recovering")
    assert is_recovering(None, "not master or secondary; cannot read")
    assert not is_not_writable_primary(None, "not master or secondary")
    assert is_not_writable_primary(None, "not master")
    assert not is_state_change_error(1, "not master")
    assert not is_state_change_error(1, "node is recovering")


def test_shutdown_and_retryable_tables() -> None:
    assert is_shutdown(91) and is_shutdown(11600) and not is_shutdown(189)
    assert not is_shutdown(None)
    assert is_retryable_read_code(134) and not is_retryable_write_code(134)
    assert is_retryable_write_code(262) and is_retryable_write_code(9001)
    assert not is_retryable_read_code(None)


# -- application errors ------------------------------------------------------------------


def test_stale_generation_is_ignored() -> None:
    verdict = application_error_verdict(PRIMARY, RS, pool_generation=1, error=command(91))
    assert verdict.ignored_because and "generation" in verdict.ignored_because
    assert not verdict.mark_unknown and not verdict.clear_pool


@pytest.mark.parametrize("counter", [4, 5])
def test_error_not_newer_than_the_description_is_ignored(counter: int) -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, command(10107, counter=counter))
    assert verdict.ignored_because and "topologyVersion" in verdict.ignored_because


def test_not_writable_primary_marks_unknown_and_requests_a_check() -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, command(10107, "not primary", counter=6))
    assert verdict.new_description is not None
    assert verdict.new_description.server_type is ServerType.UNKNOWN
    assert verdict.new_description.topology_version == TopologyVersion(PID, 6)
    assert "not primary" in (verdict.new_description.error or "")
    assert verdict.request_immediate_check and not verdict.clear_pool


def test_shutdown_error_clears_the_pool() -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, command(91, "shutting down"))
    assert verdict.mark_unknown and verdict.clear_pool and verdict.request_immediate_check


def test_message_fallback_without_code() -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, command(None, "node is recovering"))
    assert verdict.mark_unknown


def test_ordinary_command_error_is_ignored() -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, command(2, "bad value"))
    assert verdict.ignored_because is not None


def test_write_concern_error_is_checked_but_write_errors_are_not() -> None:
    wce = ApplicationError.from_command_reply(
        {"ok": 1, "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"}},
        generation=0,
    )
    assert wce is not None and wce.code == 91
    verdict = application_error_verdict(PRIMARY, RS, 0, wce)
    assert verdict.mark_unknown and verdict.clear_pool
    write_errors = {"ok": 1, "writeErrors": [{"code": 10107, "errmsg": "x", "index": 0}]}
    assert ApplicationError.from_command_reply(write_errors, generation=0) is None


def test_network_error_after_handshake_marks_unknown_clears_and_cancels_check() -> None:
    verdict = application_error_verdict(
        PRIMARY, RS, 0, network(ErrorKind.NETWORK, ErrorPhase.ESTABLISHED)
    )
    assert verdict.mark_unknown and verdict.clear_pool and verdict.cancel_check
    assert not verdict.request_immediate_check
    assert not verdict.interrupt_in_use_connections


def test_timeout_after_handshake_is_ignored() -> None:
    verdict = application_error_verdict(
        PRIMARY, RS, 0, network(ErrorKind.TIMEOUT, ErrorPhase.ESTABLISHED)
    )
    assert verdict.ignored_because is not None


@pytest.mark.parametrize("kind", [ErrorKind.NETWORK, ErrorKind.TIMEOUT])
def test_network_errors_while_connecting_change_nothing(kind: ErrorKind) -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, network(kind, ErrorPhase.CONNECTING))
    assert verdict.ignored_because is not None


@pytest.mark.parametrize("kind", [ErrorKind.NETWORK, ErrorKind.TIMEOUT])
def test_network_errors_while_authenticating_mark_unknown(kind: ErrorKind) -> None:
    verdict = application_error_verdict(PRIMARY, RS, 0, network(kind, ErrorPhase.AUTHENTICATING))
    assert verdict.mark_unknown and verdict.clear_pool


def test_command_error_during_handshake_marks_unknown() -> None:
    auth_failed = ApplicationError(
        ErrorKind.COMMAND, ErrorPhase.AUTHENTICATING, 0, code=18, message="auth failed"
    )
    verdict = application_error_verdict(PRIMARY, RS, 0, auth_failed)
    assert verdict.mark_unknown and verdict.clear_pool


def test_backpressure_label_is_ignored() -> None:
    overloaded = network(
        ErrorKind.NETWORK,
        ErrorPhase.AUTHENTICATING,
        labels=frozenset({"SystemOverloadedError", "RetryableError"}),
    )
    assert application_error_verdict(PRIMARY, RS, 0, overloaded).ignored_because


def test_load_balanced_never_marks_unknown_and_clears_by_service() -> None:
    balancer = ServerDescription.load_balancer(A)
    service = ObjectId("0000000000000000000000aa")
    error = network(ErrorKind.NETWORK, ErrorPhase.ESTABLISHED, service_id=service)
    verdict = application_error_verdict(balancer, LB, 0, error)
    assert not verdict.mark_unknown and verdict.clear_pool and verdict.service_id == service
    no_service = network(ErrorKind.NETWORK, ErrorPhase.AUTHENTICATING)
    assert application_error_verdict(balancer, LB, 0, no_service).ignored_because
    shutdown = ApplicationError.from_command_reply(
        {"ok": 0, "code": 91, "errmsg": "x"}, 0, service_id=service
    )
    assert shutdown is not None
    verdict = application_error_verdict(balancer, LB, 0, shutdown)
    assert not verdict.mark_unknown and verdict.clear_pool and verdict.service_id == service


# -- monitor errors ----------------------------------------------------------------------


def test_monitor_timeout_interrupts_in_use_connections() -> None:
    verdict = monitor_error_verdict(PRIMARY, MonitorError(ErrorKind.TIMEOUT, "timed out"))
    assert verdict.new_description.server_type is ServerType.UNKNOWN
    assert verdict.clear_pool and verdict.interrupt_in_use_connections


def test_monitor_network_error_on_a_known_server_retries_at_once() -> None:
    verdict = monitor_error_verdict(PRIMARY, MonitorError(ErrorKind.NETWORK, "reset"))
    assert verdict.check_again_immediately and not verdict.interrupt_in_use_connections
    unknown = ServerDescription.unknown(A)
    again = monitor_error_verdict(unknown, MonitorError(ErrorKind.NETWORK))
    assert not again.check_again_immediately


def test_monitor_command_error_waits_for_the_next_heartbeat() -> None:
    verdict = monitor_error_verdict(PRIMARY, MonitorError(ErrorKind.COMMAND, "hello failed"))
    assert verdict.clear_pool and not verdict.check_again_immediately
    assert "hello failed" in (verdict.new_description.error or "")


# -- exceptions to errors ----------------------------------------------------------------


def test_exceptions_map_to_error_kinds() -> None:
    from asyncmongo.errors import AutoReconnect, NetworkTimeout

    timeout = ApplicationError.from_exception(NetworkTimeout("timed out"), 3)
    assert timeout is not None and timeout.kind is ErrorKind.TIMEOUT and timeout.generation == 3
    os_timeout = ApplicationError.from_exception(TimeoutError(), 0)
    assert os_timeout is not None and os_timeout.kind is ErrorKind.TIMEOUT
    reset = ApplicationError.from_exception(ConnectionResetError("reset"), 0)
    assert reset is not None and reset.kind is ErrorKind.NETWORK
    labelled = ApplicationError.from_exception(
        AutoReconnect("x", error_labels=["SystemOverloadedError"]), 0, ErrorPhase.AUTHENTICATING
    )
    assert labelled is not None and "SystemOverloadedError" in labelled.labels
    assert labelled.phase is ErrorPhase.AUTHENTICATING


def test_command_exceptions_keep_code_message_and_topology_version() -> None:
    from asyncmongo.errors import NotPrimaryError, OperationFailure, WriteConcernError

    reply = {
        "ok": 0,
        "code": 91,
        "errmsg": "shutting down",
        "topologyVersion": {"processId": PID, "counter": 9},
        "errorLabels": ["RetryableWriteError"],
    }
    failure = ApplicationError.from_exception(OperationFailure("shutting down", 91, reply), 0)
    assert failure is not None and failure.code == 91
    assert failure.topology_version == TopologyVersion(PID, 9)
    assert "RetryableWriteError" in failure.labels
    bare = ApplicationError.from_exception(OperationFailure("not master"), 0)
    assert bare is not None and bare.code is None and bare.message == "not master"
    not_primary = ApplicationError.from_exception(NotPrimaryError("node is recovering"), 0)
    assert not_primary is not None and is_recovering(not_primary.code, not_primary.message)
    concern = ApplicationError.from_exception(WriteConcernError("repl shutdown", 91), 0)
    assert concern is not None and concern.code == 91


def test_exceptions_sdam_ignores() -> None:
    from asyncmongo.errors import (
        BulkWriteError,
        PoolClearedError,
        ServerSelectionTimeoutError,
        WaitQueueTimeoutError,
        WriteError,
    )

    for exc in (
        PoolClearedError("cleared"),
        WaitQueueTimeoutError("slow"),
        ServerSelectionTimeoutError("none"),
        WriteError("dup", 11000),
        ValueError("not ours"),
        BulkWriteError({"writeErrors": [{"code": 10107}], "writeConcernErrors": []}),
    ):
        assert ApplicationError.from_exception(exc, 0) is None, exc
    bulk = BulkWriteError({"writeConcernErrors": [{"code": 11600, "errmsg": "shutdown"}]})
    concern = ApplicationError.from_exception(bulk, 0)
    assert concern is not None and concern.code == 11600
