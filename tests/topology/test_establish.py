"""Establisher: an establishment error reaches SDAM with the phase it happened in and the
pool generation the connection was made in, before it is re-raised."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from asyncmongo.bson import ObjectId
from asyncmongo.core.error_policy import ErrorPhase
from asyncmongo.errors import AutoReconnect
from asyncmongo.runtime.connection import Connection, ConnectionSettings
from asyncmongo.runtime.establish import Establisher
from tests.support.scripted_server import ScriptedServer


class FailingAuth:
    sasl_supported_mechs = None

    def speculative_document(self) -> Mapping[str, Any] | None:
        return None

    async def authenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        raise AutoReconnect("connection reset during saslContinue")


async def test_an_error_while_authenticating_is_reported_as_such() -> None:
    reports: list[tuple[BaseException, int, ErrorPhase]] = []

    async def report(
        exc: BaseException, generation: int, phase: ErrorPhase, service_id: ObjectId | None
    ) -> None:
        assert service_id is None  # not load-balanced
        reports.append((exc, generation, phase))

    async with ScriptedServer() as server:
        establish = Establisher(
            server.address, ConnectionSettings(), FailingAuth(), lambda: 3, report
        )
        with pytest.raises(AutoReconnect):
            await establish(1)
    ((error, generation, phase),) = reports
    assert isinstance(error, AutoReconnect) and generation == 3
    assert phase is ErrorPhase.AUTHENTICATING


async def test_an_error_while_connecting_is_reported_as_such() -> None:
    reports: list[ErrorPhase] = []

    async def report(
        exc: BaseException, generation: int, phase: ErrorPhase, service_id: ObjectId | None
    ) -> None:
        reports.append(phase)

    async with ScriptedServer() as server:
        address = server.address
    establish = Establisher(
        address, ConnectionSettings(connect_timeout=0.5), FailingAuth(), lambda: 0, report
    )
    with pytest.raises(AutoReconnect):
        await establish(1)  # nothing listens there any more
    assert reports == [ErrorPhase.CONNECTING]


async def test_a_good_connection_reports_nothing() -> None:
    async def report(
        exc: BaseException, generation: int, phase: ErrorPhase, service_id: ObjectId | None
    ) -> None:
        raise AssertionError("nothing failed")

    async with ScriptedServer() as server:
        establish = Establisher(server.address, ConnectionSettings(), None, lambda: 0, report)
        conn = await establish(1)
        assert not conn.is_closed
        conn.close()


class TwoStepAuth:
    """An authentication of two round trips (ping, ping), as a SASL conversation is."""

    sasl_supported_mechs = None

    def speculative_document(self) -> Mapping[str, Any] | None:
        return None

    async def authenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        for _ in range(2):
            await conn.command("admin", {"ping": 1}, deadline=deadline, check=True)


async def test_background_connections_time_each_authentication_command() -> None:
    # CSOT "Background Connection Pooling": the client's timeoutMS for each authentication
    # command, refreshed per command; checkouts and later commands keep socketTimeoutMS
    from asyncmongo.errors import NetworkTimeout
    from asyncmongo.testing import Standalone

    phases: list[ErrorPhase] = []

    async def report(
        exc: BaseException, generation: int, phase: ErrorPhase, service_id: ObjectId | None
    ) -> None:
        phases.append(phase)

    async with Standalone() as server:
        address = ("127.0.0.1", server.server.port)
        settings = ConnectionSettings(socket_timeout=5.0)
        establish = Establisher(address, settings, TwoStepAuth(), lambda: 0, report,
                                background_timeout=0.4)
        with server.fail_point("alwaysOn", failCommands=["ping"], blockConnection=True,
                               blockTimeMS=250):
            conn = await establish.background(1)  # 2 x 250ms > 400ms: refreshed per command
            assert conn._settings.socket_timeout == 5.0  # timeoutMS was for the handshake
            conn.close()
        with server.fail_point("alwaysOn", failCommands=["ping"], blockConnection=True,
                               blockTimeMS=600):
            with pytest.raises(NetworkTimeout):
                await establish.background(2)
            assert phases == [ErrorPhase.AUTHENTICATING]
            conn = await establish(3)  # a checkout's: socketTimeoutMS (5s), not timeoutMS
            conn.close()
