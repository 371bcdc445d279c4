"""The handshake spec's "Client Metadata Update Prose Tests" 1-8
(spec_tests/data/mongodb-handshake/README.md) against the simulator.

The simulator's hello hook records every handshake ``client`` document in arrival order (the
spec's "test-only backdoor"); with maxIdleTimeMS=1 and a 5 ms pause, each ping opens a new
pooled connection, whose handshake is the one inspected. Monitoring polls (no RTT
connection), so the only handshakes after the first are the pool's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, DriverInfo
from asyncmongo.testing import SimServer

pytestmark = pytest.mark.timeout(30)

LIBRARY = DriverInfo("library", "1.2", "Library Platform")
FRAMEWORK = DriverInfo("framework", "2.0", "Framework Platform")


class Intercepted:
    """A client on a fresh simulator whose handshake documents are recorded."""

    def __init__(self, server: SimServer, client: AsyncMongoClient) -> None:
        self.server = server
        self.client = client
        self.handshakes: list[Mapping[str, Any]] = []
        original = server.hello_reply

        def recording(command: Mapping[str, Any], conn: Any = None) -> dict[str, Any]:
            if "client" in command:
                self.handshakes.append(command["client"])
            return original(command, conn)

        server.hello_reply = recording  # type: ignore[method-assign]

    async def ping(self) -> Mapping[str, Any]:
        """Wait for the pooled connection to go idle (perished at the next checkout), ping
        and return the newest handshake's client document."""
        await asyncio.sleep(0.005)
        reply = await self.client.admin_command({"ping": 1})
        assert reply["ok"] == 1.0
        return self.handshakes[-1]


@pytest.fixture
async def start() -> AsyncIterator[Any]:
    opened: list[tuple[SimServer, AsyncMongoClient]] = []

    async def make(driver_info: DriverInfo | None = None) -> Intercepted:
        server = SimServer()
        await server.start()
        options: dict[str, Any] = {"driver_info": driver_info} if driver_info else {}
        client = AsyncMongoClient(
            f"mongodb://127.0.0.1:{server.port}/?maxIdleTimeMS=1&serverMonitoringMode=poll",
            **options,
        )
        opened.append((server, client))
        return Intercepted(server, client)

    yield make
    for server, client in opened:
        await client.close()
        await server.stop()


def _appended(client_doc: Mapping[str, Any]) -> tuple[str, str, str]:
    """name, version, platform without the driver's own first part."""
    driver = client_doc["driver"]
    return tuple(  # type: ignore[return-value]
        "|".join(value.split("|")[1:])
        for value in (driver["name"], driver["version"], client_doc.get("platform", ""))
    )


def _others(client_doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in client_doc.items() if k not in ("driver", "platform")}


def _expected(base: DriverInfo, case: DriverInfo) -> tuple[str, str, str]:
    def join(old: str | None, new: str | None) -> str:
        return f"{old}|{new}" if new else str(old)

    return (join(base.name, case.name), join(base.version, case.version),
            join(base.platform, case.platform))


APPENDED_CASES = [
    DriverInfo("framework", "2.0", "Framework Platform"),
    DriverInfo("framework", "2.0", None),
    DriverInfo("framework", None, "Framework Platform"),
    DriverInfo("framework", None, None),
]


@pytest.mark.parametrize("case", APPENDED_CASES, ids=["1", "2", "3", "4"])
async def test_1_driver_updates_metadata(start: Any, case: DriverInfo) -> None:
    t = await start(LIBRARY)
    initial = await t.ping()
    t.client.append_metadata(case)
    updated = await t.ping()
    assert _appended(updated) == _expected(LIBRARY, case)
    assert _others(updated) == _others(initial)


@pytest.mark.parametrize("case", APPENDED_CASES, ids=["1", "2", "3", "4"])
async def test_2_multiple_successive_updates(start: Any, case: DriverInfo) -> None:
    t = await start()
    t.client.append_metadata(LIBRARY)
    before = await t.ping()
    t.client.append_metadata(case)
    updated = await t.ping()
    assert _appended(updated) == _expected(LIBRARY, case)
    assert _others(updated) == _others(before)


DUPLICATE_CASES = [
    DriverInfo("library", "1.2", "Library Platform"),
    DriverInfo("framework", "1.2", "Library Platform"),
    DriverInfo("library", "2.0", "Library Platform"),
    DriverInfo("library", "1.2", "Framework Platform"),
    DriverInfo("framework", "2.0", "Library Platform"),
    DriverInfo("framework", "1.2", "Framework Platform"),
    DriverInfo("library", "2.0", "Framework Platform"),
]


@pytest.mark.parametrize("case", DUPLICATE_CASES, ids=[str(i) for i in range(1, 8)])
async def test_3_successive_updates_with_duplicate_data(start: Any, case: DriverInfo) -> None:
    t = await start()
    t.client.append_metadata(LIBRARY)
    before = await t.ping()
    t.client.append_metadata(case)
    updated = await t.ping()
    if case == LIBRARY:
        assert _appended(updated) == ("library", "1.2", "Library Platform")
    else:
        assert _appended(updated) == _expected(LIBRARY, case)
    assert _others(updated) == _others(before)


async def test_4_multiple_updates_with_duplicate_data(start: Any) -> None:
    t = await start()
    t.client.append_metadata(LIBRARY)
    await t.ping()
    t.client.append_metadata(FRAMEWORK)
    client_metadata = await t.ping()
    t.client.append_metadata(LIBRARY)
    assert await t.ping() == client_metadata


async def test_5_not_appended_if_identical_to_initial(start: Any) -> None:
    t = await start(LIBRARY)
    client_metadata = await t.ping()
    t.client.append_metadata(LIBRARY)
    assert await t.ping() == client_metadata


async def test_6_not_appended_if_identical_to_initial_separated(start: Any) -> None:
    t = await start(LIBRARY)
    await t.ping()
    t.client.append_metadata(DriverInfo("framework", "1.2", "Library Platform"))
    client_metadata = await t.ping()
    t.client.append_metadata(LIBRARY)
    assert await t.ping() == client_metadata


# Case 1 of tests 7 and 8 is struck out in the spec (a null name), and DriverInfo's name is
# required, so cases 2 and 3 are the ones that apply.
EMPTY_CASES = [
    (DriverInfo("library", None, "Library Platform"),
     DriverInfo("library", "", "Library Platform")),
    (DriverInfo("library", "1.2", None), DriverInfo("library", "1.2", "")),
]


@pytest.mark.parametrize(("appended", "duplicate"), EMPTY_CASES, ids=["2", "3"])
async def test_7_empty_strings_are_unset_when_appending(start: Any, appended: DriverInfo,
                                                        duplicate: DriverInfo) -> None:
    t = await start()
    t.client.append_metadata(appended)
    client_metadata = await t.ping()
    t.client.append_metadata(duplicate)
    assert await t.ping() == client_metadata


@pytest.mark.parametrize(("initial", "appended"), EMPTY_CASES, ids=["2", "3"])
async def test_8_empty_strings_are_unset_against_initial(start: Any, initial: DriverInfo,
                                                         appended: DriverInfo) -> None:
    t = await start(initial)
    initial_metadata = await t.ping()
    t.client.append_metadata(appended)
    assert await t.ping() == initial_metadata


async def test_a_new_connection_really_is_made_for_each_ping(start: Any) -> None:
    """The harness itself: every ping after the pause handshakes anew (else the tests above
    would compare one connection's document with itself)."""
    t = await start()
    await t.ping()
    count = len(t.handshakes)
    await t.ping()
    assert len(t.handshakes) == count + 1
