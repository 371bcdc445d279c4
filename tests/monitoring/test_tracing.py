"""OpenTelemetry tracing (open-telemetry spec): how it is enabled, the spec's prose tests,
exceptions on operation and command spans, and that a client without it never imports
OpenTelemetry.

The spans go to an in-memory exporter behind a TracerProvider given to the client (the
global provider is left alone), against a simulated standalone.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import AutoReconnect, ConfigurationError, OperationFailure
from asyncmongo.monitoring.tracing import (
    ENABLED_VARIABLE,
    QUERY_TEXT_VARIABLE,
    TracingOptions,
    tracing_options,
)
from asyncmongo.sessions import UNKNOWN_COMMIT_RESULT
from asyncmongo.testing import ReplicaSet, Standalone

#: The repository: a subprocess imports this checkout's asyncmongo.
ROOT = Path(__file__).resolve().parents[2]

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
sdk_export = pytest.importorskip("opentelemetry.sdk.trace.export")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")


@pytest.fixture
def exporter() -> Iterator[Any]:
    spans = in_memory.InMemorySpanExporter()
    yield spans
    spans.clear()


def _spans(exporter: Any) -> list[Any]:
    """The finished spans, but those of the endSessions a client sends as it closes."""
    return [span for span in exporter.get_finished_spans()
            if not span.name.startswith("endSessions")]


def _provider(exporter: Any) -> Any:
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(sdk_export.SimpleSpanProcessor(exporter))
    return provider


# -- options --------------------------------------------------------------------------------


def test_off_by_default() -> None:
    assert tracing_options(None, {}) == TracingOptions(False, 0, None)


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", " yes "])
def test_the_environment_enables_it(value: str) -> None:
    assert tracing_options(None, {ENABLED_VARIABLE: value}).enabled


@pytest.mark.parametrize("value", ["", "0", "false", "no", "on"])
def test_other_values_leave_it_off(value: str) -> None:
    assert not tracing_options(None, {ENABLED_VARIABLE: value}).enabled


def test_the_client_option_overrides_the_environment() -> None:
    environ = {ENABLED_VARIABLE: "true", QUERY_TEXT_VARIABLE: "100"}
    assert not tracing_options({"enabled": False}, environ).enabled
    assert tracing_options({"enabled": True}, {}).enabled
    assert tracing_options({"query_text_max_length": 5}, environ).query_text_max_length == 5
    assert tracing_options({}, environ).query_text_max_length == 100


@pytest.mark.parametrize("text", ["", "x", "-3"])
def test_a_malformed_length_variable_means_no_query_text(text: str) -> None:
    assert tracing_options(None, {QUERY_TEXT_VARIABLE: text}).query_text_max_length == 0


@pytest.mark.parametrize("option", [{"enabled": "yes"}, {"query_text_max_length": -1},
                                    {"query_text_max_length": True}, {"sampler": None}])
def test_bad_client_options_are_configuration_errors(option: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        tracing_options(option, {})


def test_a_client_without_tracing_never_imports_opentelemetry() -> None:
    code = ("import sys, asyncmongo\n"
            "asyncmongo.AsyncMongoClient('mongodb://localhost:1', tracing={'enabled': False})\n"
            "assert not [m for m in sys.modules if m.startswith('opentelemetry')]\n")
    env = {"PATH": "", ENABLED_VARIABLE: "true"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)


def test_tracing_without_the_otel_extra_says_what_to_install() -> None:
    code = ("import sys\n"
            "sys.modules['opentelemetry'] = None\n"
            "import asyncmongo\n"
            "try:\n"
            "    asyncmongo.AsyncMongoClient('mongodb://localhost:1', tracing={'enabled': True})\n"
            "except asyncmongo.errors.ConfigurationError as exc:\n"
            "    assert 'asyncmongo[otel]' in str(exc), exc\n"
            "else:\n"
            "    raise AssertionError('no ConfigurationError')\n")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PATH": ""}, cwd=ROOT)


def test_the_variable_without_the_otel_extra_warns_and_does_not_trace() -> None:
    code = ("import sys, warnings\n"
            "sys.modules['opentelemetry'] = None\n"
            "import asyncmongo\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    client = asyncmongo.AsyncMongoClient('mongodb://localhost:1')\n"
            "assert client._tracing is None\n"
            "(warning,) = [w for w in caught if 'asyncmongo[otel]' in str(w.message)]\n"
            "assert issubclass(warning.category, asyncmongo.errors.ConfigurationWarning)\n")
    env = {"PATH": "", ENABLED_VARIABLE: "true"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)


# -- prose tests ----------------------------------------------------------------------------


async def test_prose_1_enabled_by_the_environment_variable(
    exporter: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Standalone() as server:
        monkeypatch.setenv(ENABLED_VARIABLE, "false")
        async with AsyncMongoClient(server.uri,
                                    tracing={"tracer_provider": _provider(exporter)}) as client:
            await client.db.c.find_one({})
        assert exporter.get_finished_spans() == ()
        monkeypatch.setenv(ENABLED_VARIABLE, "true")
        async with AsyncMongoClient(server.uri,
                                    tracing={"tracer_provider": _provider(exporter)}) as client:
            await client.db.c.find_one({})
        names = [span.name for span in _spans(exporter)]
        assert names == ["find", "find db.c"]


async def test_prose_2_query_text_by_the_environment_variable(
    exporter: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Standalone() as server:
        monkeypatch.setenv(ENABLED_VARIABLE, "true")
        monkeypatch.setenv(QUERY_TEXT_VARIABLE, "1024")
        async with AsyncMongoClient(server.uri,
                                    tracing={"tracer_provider": _provider(exporter)}) as client:
            await client.db.c.find_one({"x": 1})
        command = exporter.get_finished_spans()[0]
        assert command.attributes["db.query.text"].startswith('{"find": "c", "filter": {"x": 1}')
        exporter.clear()
        monkeypatch.delenv(QUERY_TEXT_VARIABLE)
        async with AsyncMongoClient(server.uri,
                                    tracing={"tracer_provider": _provider(exporter)}) as client:
            await client.db.c.find_one({"x": 1})
        command = exporter.get_finished_spans()[0]
        assert "db.query.text" not in command.attributes


# -- spans ----------------------------------------------------------------------------------


async def test_query_text_is_cut_to_its_length(exporter: Any) -> None:
    async with Standalone() as server:
        tracing = {"enabled": True, "query_text_max_length": 10,
                   "tracer_provider": _provider(exporter)}
        async with AsyncMongoClient(server.uri, tracing=tracing) as client:
            await client.db.c.find_one({"x": 1})
    assert exporter.get_finished_spans()[0].attributes["db.query.text"] == '{"find": "...'


async def test_a_traced_operation_keeps_its_own_timeout(exporter: Any) -> None:
    """Tracing wraps the operation without changing its deadline: a collection's timeoutMS
    (not the client's) becomes the command's maxTimeMS, and a getMore carries none."""
    started: list[Any] = []
    async with Standalone() as server:
        tracing = {"enabled": True, "tracer_provider": _provider(exporter)}
        async with AsyncMongoClient(server.uri, tracing=tracing,
                                    event_listeners=[started.append]) as client:
            coll = client.db.get_collection("c", timeout_ms=60_000)
            await coll.insert_many([{"i": i} for i in range(3)])
            assert len(await coll.find(batch_size=2).to_list()) == 3
    commands = {e.command_name: e.command for e in started
                if type(e).__name__ == "CommandStartedEvent"}
    assert 50_000 < commands["find"]["maxTimeMS"] <= 60_000
    assert "maxTimeMS" not in commands["getMore"]


async def test_a_failed_operation_records_its_exception(exporter: Any) -> None:
    async with Standalone() as server:
        tracing = {"enabled": True, "tracer_provider": _provider(exporter)}
        async with AsyncMongoClient(server.uri, tracing=tracing) as client:
            with pytest.raises(OperationFailure):
                await client.db.command({"noSuchCommand": 1})
    command, operation = _spans(exporter)
    assert operation.name == "runCommand db"
    assert command.parent.span_id == operation.context.span_id
    assert command.attributes["db.response.status_code"] == "59"
    for span in (command, operation):
        assert not span.status.is_ok
        assert span.attributes["exception.type"] == "asyncmongo.errors.OperationFailure"
        assert span.attributes["exception.stacktrace"]
    assert [event.name for event in operation.events] == ["exception"]


async def test_operations_nest_in_the_host_applications_span(exporter: Any) -> None:
    provider = _provider(exporter)
    async with Standalone() as server:
        tracing = {"enabled": True, "tracer_provider": provider}
        async with AsyncMongoClient(server.uri, tracing=tracing) as client:
            from opentelemetry import trace

            with provider.get_tracer("app").start_as_current_span("request") as request:
                await client.db.c.insert_one({"_id": 1})
            assert isinstance(request, trace.Span)
    command, operation, root = _spans(exporter)
    assert (operation.name, root.name) == ("insert db.c", "request")
    assert operation.parent.span_id == root.context.span_id
    assert command.attributes["db.command.name"] == "insert"
    assert operation.attributes["db.operation.name"] == "insert"
    host, port = command.attributes["server.address"], command.attributes["server.port"]
    assert f"{host}:{port}" == server.server.host
    assert command.attributes["network.transport"] == "tcp"
    assert operation.instrumentation_scope.name == "asyncmongo"


def _tree(spans: list[Any]) -> list[tuple[str, list[Any]]]:
    """(name, children) trees of the spans, in start order."""
    ordered = sorted(spans, key=lambda span: span.start_time)
    children: dict[int | None, list[Any]] = {}
    for span in ordered:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def build(span: Any) -> tuple[str, list[Any]]:
        return span.name, [build(child) for child in children.get(span.context.span_id, [])]

    return [build(span) for span in children.get(None, [])]


async def test_a_retried_commit_stays_in_its_transaction_span(exporter: Any) -> None:
    async with ReplicaSet(members=1) as rs:
        tracing = {"enabled": True, "tracer_provider": _provider(exporter)}
        async with AsyncMongoClient(rs.uri, tracing=tracing) as client:
            async with client.start_session() as session:
                session.start_transaction()
                await client.db.c.insert_one({"_id": 1}, session=session)
                with rs.fail_point({"times": 2}, failCommands=["commitTransaction"],
                                   closeConnection=True):
                    with pytest.raises(AutoReconnect) as info:
                        await session.commit_transaction()
                assert info.value.has_error_label(UNKNOWN_COMMIT_RESULT)
                await session.commit_transaction()
                await client.db.c.find_one({}, session=session)
    assert _tree(_spans(exporter)) == [
        ("transaction", [
            ("insert db.c", [("insert", [])]),
            ("commitTransaction admin", [("commitTransaction", []), ("commitTransaction", [])]),
            ("commitTransaction admin", [("commitTransaction", [])]),
        ]),
        ("find db.c", [("find", [])]),
    ]
    transaction = next(s for s in exporter.get_finished_spans() if s.name == "transaction")
    assert dict(transaction.attributes) == {"db.system.name": "mongodb"}


async def test_an_aborted_transaction_ends_its_span(exporter: Any) -> None:
    async with ReplicaSet(members=1) as rs:
        tracing = {"enabled": True, "tracer_provider": _provider(exporter)}
        async with AsyncMongoClient(rs.uri, tracing=tracing) as client:
            async with client.start_session() as session:
                async with session.start_transaction():
                    await client.db.c.insert_one({"_id": 1}, session=session)
                    await session.abort_transaction()
                session.start_transaction()  # never used: ends with the session
    assert [name for name, _ in _tree(_spans(exporter))] == ["transaction", "transaction"]


def test_a_unix_socket_command_has_no_port(exporter: Any) -> None:
    from asyncmongo.monitoring import CommandStartedEvent, CommandSucceededEvent
    from asyncmongo.monitoring.otel import Tracer

    tracer = Tracer(tracer_provider=_provider(exporter))
    address = ("/tmp/mongodb-27017.sock", None)
    tracer(CommandStartedEvent("getMore", "db", 7, 7, address, 1, None, None,
                               {"getMore": 42, "collection": "c", "$db": "db"}))
    tracer(CommandSucceededEvent("getMore", "db", 7, 7, address, 1, None, None, 5,
                                 {"ok": 1, "cursor": {"id": 0, "nextBatch": []}}))
    (span,) = exporter.get_finished_spans()
    assert span.attributes["network.transport"] == "unix"
    assert "server.port" not in span.attributes
    assert span.attributes["db.mongodb.cursor_id"] == 42
    assert span.attributes["db.query.summary"] == "getMore db.c"
    assert "db.query.text" not in span.attributes
