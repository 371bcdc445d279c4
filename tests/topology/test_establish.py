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
