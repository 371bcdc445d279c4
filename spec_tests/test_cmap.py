"""Runs the CMAP spec suite (connection-monitoring-and-pooling) against the asyncio Pool.

cmap-format: every unit test runs over fake connections; the integration tests (``runOn`` +
``failPoint``) run against asyncmongo.testing (spec_tests/support/cmap_integration.py): a
simulated Standalone with the fail point set through an admin connection, the pool opening
real connections. logging/: the pool-options tests run at the pool level (the client entity
stands for one pool); the others need a MongoClient against a server and are skipped with the
reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.core.cmap.events import ConnectionReadyEvent, PoolReadyEvent
from asyncmongo.runtime.pool import Pool
from spec_tests.support.cmap_integration import run_integration
from spec_tests.support.cmap_logging import (
    needs_server,
    observed_clients,
    run_client_logging_test,
    unmet_requirements,
)
from spec_tests.support.cmap_runner import (
    ADDRESS,
    CmapRunner,
    EventLog,
    FakeConnection,
    LogCapture,
    establish_fake,
    pool_options,
)

SUITE = Path(__file__).parent / "data" / "connection-monitoring-and-pooling"


def _cmap_cases() -> list[Any]:
    paths = sorted(p for p in SUITE.rglob("*.json") if "logging" not in p.parts)
    return [
        pytest.param(json.loads(p.read_text()), id=str(p.relative_to(SUITE)).removesuffix(".json"))
        for p in paths
    ]


@pytest.mark.parametrize("test", _cmap_cases())
async def test_cmap(test: dict[str, Any]) -> None:
    if test["style"] == "integration":
        reason = await run_integration(test)
        if reason is not None:
            pytest.skip(reason)
        return
    assert test["style"] == "unit", test["style"]
    await CmapRunner(test).run()


# -- logging ---------------------------------------------------------------------------------

UNSUPPORTED_OPTIONS = {
    "waitQueueSize": (
        "waitQueueSize/waitQueueMultiple are deprecated; CMAP says drivers that never had "
        "them MUST NOT implement them, so they are not pool options here"
    ),
}
#: Client tests that run against the simulator but cannot pass yet, with the reason.
CLIENT_GAPS: dict[str, str] = {}
EVENT_NAMES: Mapping[str, type] = {
    "connectionReadyEvent": ConnectionReadyEvent,
    "poolReadyEvent": PoolReadyEvent,
}
URI_OPTIONS = {"maxPoolSize", "minPoolSize", "maxIdleTimeMS", "maxConnecting", "waitQueueTimeoutMS"}
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}


def _logging_cases() -> list[Any]:
    out = []
    for path in sorted((SUITE / "logging").rglob("*.json")):
        document = json.loads(path.read_text())
        for test in document["tests"]:
            case_id = f"{path.stem}/{test['description']}"
            out.append(pytest.param(document.get("runOnRequirements", []), test, id=case_id))
    return out


@pytest.mark.parametrize(("requirements", "test"), _logging_cases())
async def test_cmap_logging(requirements: list[dict[str, Any]], test: dict[str, Any]) -> None:
    if needs_server(test):
        messages = await _run_against_server(requirements, test)
    else:
        messages = await _run_pool_level(test)
    (expected,) = test["expectLogMessages"]
    assert len(messages) == len(expected["messages"]), messages
    for (level, fields), want in zip(messages, expected["messages"], strict=True):
        assert want["component"] == "connection"
        assert level == LEVELS[want["level"]]
        _match_log_fields(fields, want["data"])


async def _run_against_server(
    requirements: list[dict[str, Any]], test: dict[str, Any]
) -> list[tuple[int, Mapping[str, Any]]]:
    """A client against a simulated Standalone (spec_tests/support/cmap_logging.py)."""
    reason = unmet_requirements(requirements, test)
    if reason is not None:
        pytest.skip(reason)
    if test["description"] in CLIENT_GAPS:
        pytest.skip(CLIENT_GAPS[test["description"]])
    (expected,) = test["expectLogMessages"]
    assert expected["client"] in observed_clients(test), expected
    return await run_client_logging_test(requirements, test)


async def _run_pool_level(test: dict[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """A client that only waits for its pool's events: its one pool, without a server."""
    create, wait = test["operations"]
    client = create["arguments"]["entities"][0]["client"]
    uri_options = client.get("uriOptions", {})
    for name, reason in UNSUPPORTED_OPTIONS.items():
        if name in uri_options:
            pytest.skip(reason)
    assert set(uri_options) <= URI_OPTIONS, uri_options
    assert wait["name"] == "waitForEvent", wait
    assert test["expectLogMessages"][0]["client"] == client["id"]
    return await _run_client_as_pool(uri_options, wait["arguments"])


async def _run_client_as_pool(
    uri_options: Mapping[str, Any], wait: Mapping[str, Any]
) -> list[tuple[int, Mapping[str, Any]]]:
    """The client entity's one pool: created, then marked ready as a first heartbeat would."""
    logger = logging.getLogger("asyncmongo.connection")
    capture = LogCapture()
    old_level = logger.level
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    log = EventLog()
    options, interval = pool_options(uri_options)
    pool: Pool[FakeConnection] = Pool(
        ADDRESS, options, establish_fake, listener=log.append, maintenance_interval=interval
    )
    try:
        pool.ready()
        ((event_name, _),) = wait["event"].items()
        cls = EVENT_NAMES[event_name]
        async with asyncio.timeout(5):
            await log.wait_for(cls, wait["count"])
        return list(capture.messages)
    finally:
        logger.removeHandler(capture)
        logger.setLevel(old_level)
        await pool.close()


def _match_log_fields(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    for key, want in expected.items():
        if isinstance(want, dict) and "$$exists" in want:
            assert (key in actual) == want["$$exists"], (key, actual)
            continue
        assert key in actual, (key, actual)
        if isinstance(want, dict) and "$$type" in want:
            types = want["$$type"] if isinstance(want["$$type"], list) else [want["$$type"]]
            assert any(_is_type(actual[key], t) for t in types), (key, actual[key], types)
        else:
            assert actual[key] == want and type(actual[key]) is type(want), (key, actual[key])


def _is_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "int":
        return type(value) is int and -(2**31) <= value < 2**31
    if name == "long":
        return type(value) is int
    if name == "double":
        return type(value) is float
    raise AssertionError(f"unsupported $$type {name!r}")
