"""Executing a Test (unified test format): entities, initialData, operations, outcome.

For each test, in the spec's order: skip it when skipReason is set or its runOnRequirements
are unmet; killAllSessions; write initialData with the internal client (drop, then insert or
create, majority write concern); create the file's entities; run the operations, checking
each one's expectResult / expectError / saveResultAsEntity / ignoreResultAndError (log
messages are captured meanwhile); check expectEvents, expectLogMessages and the outcome;
finally turn off the fail points it set and close every entity.

:class:`Unsupported` from anywhere becomes a skip with its reason; so does a failure that
:mod:`spec_tests.unified.gaps` recognises precisely (an unknown command or fail point in the
simulator's answer, against the simulator only). The reviewed per-test lists of known gaps
are applied by :mod:`spec_tests.unified.suite`. Every other exception is a failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import asyncmongo
from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import OperationFailure
from spec_tests.unified.entities import ClientEntity, EntityMap
from spec_tests.unified.errors import TestFormatError, Unsupported
from spec_tests.unified.events import check_expected_events
from spec_tests.unified.expect_error import check_error
from spec_tests.unified.gaps import simulator_gap_reason
from spec_tests.unified.logs import LogCapture, LogEntry, check_log_messages, messages_for
from spec_tests.unified.matcher import MatchError, exactly_equal, match
from spec_tests.unified.operations import VERBATIM_OPERATIONS, convert_arguments, find_handler
from spec_tests.unified.schema import UnifiedFile, requirements_unmet_reason
from spec_tests.unified.special import find_special
from spec_tests.unified.target import Target, run_command
from spec_tests.unified.tracing import check_tracing_messages

__all__ = ["UnifiedTestRunner"]

_MAJORITY = {"w": "majority"}


class UnifiedTestRunner:
    """Runs the tests of one unified file against one target."""

    def __init__(self, file: UnifiedFile, target: Target, internal: AsyncMongoClient, *,
                 excuse_simulator_gaps: bool = True) -> None:
        self.file = file
        self.excuse_simulator_gaps = excuse_simulator_gaps and target.simulated
        self.target = target
        self.internal = internal
        self.entities = EntityMap(target)
        self._fail_points: list[tuple[AsyncMongoClient, str]] = []
        self._owned_clients: list[AsyncMongoClient] = []
        self._test_text = ""

    # -- the test loop ---------------------------------------------------------------------

    def skip_reason(self, test: Mapping[str, Any]) -> str | None:
        """Why this test does not run here (skipReason or unmet runOnRequirements)."""
        if "skipReason" in test:
            return f"the test file says: {test['skipReason']}"
        for requirements in (self.file.run_on_requirements, test.get("runOnRequirements", ())):
            reason = requirements_unmet_reason(requirements, self.target.info)
            if reason is not None:
                return reason
        return None

    async def run_test(self, test: Mapping[str, Any]) -> None:
        """Run one test; raises Unsupported (skip) or an assertion error (failure)."""
        self._test_text = json.dumps([test, self.file.create_entities,
                                      self.file.initial_data], default=str)
        self.entities = EntityMap(self.target, fast_heartbeat=_sets_fail_points(test))
        self.entities.initial_data = self.file.initial_data
        self.entities.internal = self.internal
        await self._kill_all_sessions()
        try:
            try:
                await self._initial_data()
            except OperationFailure as exc:
                self._excuse(exc)
                raise
            with LogCapture() as logs:
                for spec in self.file.create_entities:
                    await self.entities.create(spec)
                await self.run_operations(test["operations"])
            self._check_events(test.get("expectEvents", ()))
            self._check_tracing(test.get("expectTracingMessages", ()))
            self._check_logs(test.get("expectLogMessages", ()), logs.entries)
            await self._check_outcome(test.get("outcome", ()))
        finally:
            await self._cleanup()

    async def _cleanup(self) -> None:
        try:
            for client, name in reversed(self._fail_points):
                try:
                    await run_command(client, "admin", {"configureFailPoint": name,
                                                        "mode": "off"})
                except Exception:
                    await run_command(self.internal, "admin",
                                      {"configureFailPoint": name, "mode": "off"})
        finally:
            self._fail_points.clear()
            for client in self._owned_clients:
                await client.close()
            self._owned_clients.clear()
            await self.entities.close()

    async def _kill_all_sessions(self) -> None:
        """Terminating Open Transactions: a previous test may have left one open."""
        if self.target.info.topology == "single":
            return
        try:
            await run_command(self.internal, "admin", {"killAllSessions": []})
        except OperationFailure:
            pass  # Interrupted (11601) is the expected answer on some servers

    def remember_fail_point(self, client: AsyncMongoClient, name: str, *,
                            owned: bool = False) -> None:
        self._fail_points.append((client, name))
        if owned:
            self._owned_clients.append(client)

    # -- data ------------------------------------------------------------------------------

    async def _initial_data(self) -> None:
        for data in self.file.initial_data:
            db, coll = data["databaseName"], data["collectionName"]
            await _drop_quietly(self.internal, db, coll)
            if data.get("createOptions") or not data["documents"]:
                await run_command(self.internal, db, {
                    "create": coll, **data.get("createOptions", {}), "writeConcern": _MAJORITY})
            if data["documents"]:
                await run_command(self.internal, db, {
                    "insert": coll, "documents": list(data["documents"]),
                    "writeConcern": _MAJORITY})

    async def _check_outcome(self, outcome: Sequence[Mapping[str, Any]]) -> None:
        for data in outcome:
            actual = await _read_all(self.internal, data["databaseName"],
                                     data["collectionName"])
            where = f"outcome {data['databaseName']}.{data['collectionName']}"
            if len(actual) != len(data["documents"]):
                raise MatchError(f"{where}: expected {len(data['documents'])} documents, "
                                 f"found {len(actual)}: {actual!r}")
            # Outcome documents match exactly (Evaluating Matches does not apply).
            for index, (want, got) in enumerate(zip(data["documents"], actual, strict=True)):
                if not exactly_equal(want, got):
                    raise MatchError(f"{where}[{index}]: expected exactly {want!r}, "
                                     f"found {got!r}")

    # -- operations ------------------------------------------------------------------------

    async def run_operations(self, operations: Sequence[Mapping[str, Any]], *,
                             propagate_errors: bool = False) -> None:
        for operation in operations:
            await self.run_operation(operation, propagate_errors=propagate_errors)

    async def run_operation(self, operation: Mapping[str, Any], *,
                            propagate_errors: bool = False) -> None:
        """Executing an Operation: run it and check what it produced.

        ``propagate_errors`` (withTransaction callbacks): an error is re-raised after its
        expectError / ignoreResultAndError was honoured, so withTransaction sees it too.
        """
        name, target = operation["name"], operation["object"]
        arguments = dict(operation.get("arguments", {}))
        if target == "testRunner":
            try:
                await find_special(name)(self, arguments)
            except KeyError as exc:
                raise TestFormatError(f"{name}: missing argument {exc}") from None
            except OperationFailure as exc:
                self._excuse(exc)
                raise
            return
        try:
            result = await self._execute(name, target, arguments)
        except (Unsupported, TestFormatError):
            raise
        except Exception as exc:
            if operation.get("ignoreResultAndError"):
                if propagate_errors:
                    raise
                return
            if "expectError" not in operation:
                self._excuse(exc)
                raise
            try:
                check_error(operation["expectError"], exc, self.entities)
            except MatchError:
                self._excuse(exc)
                raise
            if propagate_errors:
                raise
            return
        self._check_result(operation, result)

    def _excuse(self, exc: BaseException) -> None:
        """Turn a failure caused by a feature the simulator lacks into a skip."""
        reason = (simulator_gap_reason(exc, self._test_text) if self.excuse_simulator_gaps
                  else None)
        if reason is not None:
            raise Unsupported(reason) from exc

    def _check_result(self, operation: Mapping[str, Any], result: Any) -> None:
        if "expectError" in operation:
            # Never excused here: a simulator that accepts what MongoDB refuses is listed
            # test by test in gaps.SIMULATOR_GAPS, so a driver bug cannot hide behind it.
            raise MatchError(f"{operation['name']} was expected to fail, returned {result!r}")
        if "expectResult" in operation:
            match(operation["expectResult"], result, self.entities, root=True,
                  path=f"{operation['name']} result")
        if "saveResultAsEntity" in operation:
            self.entities.add(operation["saveResultAsEntity"],
                              _saved_kind(operation["name"], result), result)

    async def _execute(self, name: str, target: str, arguments: dict[str, Any]) -> Any:
        kind = self.entities.kind(target)
        obj = self.entities.get(target)
        if isinstance(obj, ClientEntity):
            obj = obj.client
        handler = find_handler(kind, name)
        arguments = dict(arguments)
        timeout_ms = arguments.pop("timeoutMS", None)
        kwargs = convert_arguments(self, arguments, verbatim=name in VERBATIM_OPERATIONS)
        if timeout_ms is None:
            return await handler(self, obj, kwargs)
        if kind in ("collection", "database") and name in _CURSOR_OPENERS:
            # a cursor's own timeoutMS (its iterations keep it, each refreshed in iteration
            # mode): the same scope with the timeout overridden
            return await handler(self, obj.with_options(timeout_ms=timeout_ms), kwargs)
        # any other operation's: an asyncmongo.timeout() block around it
        with asyncmongo.timeout(timeout_ms / 1000):
            return await handler(self, obj, kwargs)

    # -- events and log messages -----------------------------------------------------------

    def _check_logs(self, expectations: Sequence[Mapping[str, Any]],
                    entries: Sequence[LogEntry]) -> None:
        observers = [e for e in self.entities.clients().values() if e.observe_log_messages]
        for expected in expectations:
            entity: ClientEntity = self.entities.get(expected["client"], "client")
            runtime = getattr(entity.client, "_runtime", None)
            ids = {str(runtime.topology.topology_id)} if runtime is not None else set()
            observed = messages_for(entries, entity.observe_log_messages, ids,
                                    only_observer=len(observers) == 1)
            check_log_messages(expected, observed, self.entities)

    def _check_tracing(self, expectations: Sequence[Mapping[str, Any]] | Mapping[str, Any]
                       ) -> None:
        """expectTracingMessages: one object (the format) or a list of them (the
        open-telemetry tests), each for one client that observes tracing messages."""
        for expected in [expectations] if isinstance(expectations, Mapping) else expectations:
            entity: ClientEntity = self.entities.get(expected["client"], "client")
            if entity.spans is None:
                raise TestFormatError(f"client {expected['client']} does not observe tracing "
                                      "messages")
            check_tracing_messages(expected, entity.spans, self.entities)

    def _check_events(self, expectations: Sequence[Mapping[str, Any]]) -> None:
        for expected in expectations:
            entity: ClientEntity = self.entities.get(expected["client"], "client")
            observed = entity.observer.of_category(expected.get("eventType", "command"))
            check_expected_events(expected["events"], observed, self.entities,
                                  ignore_extra=expected.get("ignoreExtraEvents", False))


_CURSOR_OPENERS = frozenset({
    "find", "createFindCursor", "aggregate", "listCollections", "listIndexes",
    "runCursorCommand", "createCommandCursor", "createChangeStream", "watch",
    "listCollectionNames", "listIndexNames"})

_KIND_BY_OPERATION = {"createFindCursor": "findCursor", "createCommandCursor": "commandCursor",
                      "createChangeStream": "changeStream", "watch": "changeStream"}
_KIND_BY_TYPE = {"AsyncCollection": "collection", "AsyncDatabase": "database",
                 "AsyncClientSession": "session"}


def _saved_kind(operation: str, result: Any) -> str:
    """The entity kind of a saved result: cursors and API objects are operated on later."""
    if operation in _KIND_BY_OPERATION:
        return _KIND_BY_OPERATION[operation]
    return _KIND_BY_TYPE.get(type(result).__name__, "result")


def _sets_fail_points(value: Any) -> bool:
    """Whether a test (or any operation nested in it) configures a fail point."""
    if isinstance(value, Mapping):
        if value.get("name") in ("failPoint", "targetedFailPoint"):
            return True
        return any(_sets_fail_points(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_sets_fail_points(v) for v in value)
    return False


async def _drop_quietly(client: AsyncMongoClient, db: str, coll: str) -> None:
    try:
        await run_command(client, db, {"drop": coll, "writeConcern": _MAJORITY})
    except OperationFailure as exc:
        if exc.code != 26:  # NamespaceNotFound is fine: nothing to drop
            raise


async def _read_all(client: AsyncMongoClient, db: str, coll: str) -> list[Any]:
    """Every document of a collection by _id, primary, read concern local."""
    reply = await run_command(client, db, {
        "find": coll, "filter": {}, "sort": {"_id": 1}, "batchSize": 1000,
        "readConcern": {"level": "local"}})
    documents = list(reply["cursor"]["firstBatch"])
    cursor_id = reply["cursor"]["id"]
    while cursor_id:
        reply = await run_command(client, db, {"getMore": cursor_id, "collection": coll,
                                               "batchSize": 1000})
        documents.extend(reply["cursor"]["nextBatch"])
        cursor_id = reply["cursor"]["id"]
    return documents


__all__ += ["TestFormatError"]
