"""aconnect with an await inside (mongodb+srv resolution, faked here): concurrent callers
share one connect, a cancelled connector does not cancel the others, a failure is raised to
every waiter and the client may try again."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

import asyncmongo.runtime.client_runtime as client_module
from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import ConfigurationError
from asyncmongo.runtime.srv import SrvAnswer
from tests.topology.sim import ReplicaSet


class FakeResolution:
    def __init__(self, address: tuple[str, int | None], delay: float = 0.1) -> None:
        self.address = address
        self.delay = delay
        self.calls = 0
        self.fail = False

    async def __call__(self, options: Any, resolver: Any = None) -> tuple[Any, SrvAnswer]:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise ConfigurationError("DNS SRV lookup of '_mongodb._tcp.example.com' failed")
        return dataclasses.replace(options, hosts=(self.address,)), SrvAnswer((), 60)


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(address: tuple[str, int | None]) -> FakeResolution:
        fake = FakeResolution(address)
        monkeypatch.setattr(client_module, "resolve_srv_options", fake)
        monkeypatch.setattr(client_module, "DnspythonResolver", lambda: None)
        return fake

    return install


async def test_concurrent_first_uses_share_one_connect(fake_dns: Any) -> None:
    async with ReplicaSet(1) as rs:
        fake = fake_dns(rs.members[0].address)
        client = AsyncMongoClient("mongodb+srv://cluster.example.com/?tls=false")
        replies = await asyncio.gather(*(client.admin_command({"ping": 1}) for _ in range(5)))
        assert all(r["ok"] == 1.0 for r in replies)
        assert fake.calls == 1
        await client.close()


async def test_a_cancelled_connector_does_not_cancel_the_others(fake_dns: Any) -> None:
    async with ReplicaSet(1) as rs:
        fake = fake_dns(rs.members[0].address)
        client = AsyncMongoClient("mongodb+srv://cluster.example.com/?tls=false")
        first = asyncio.create_task(client.aconnect())
        await asyncio.sleep(0.02)
        second = asyncio.create_task(client.admin_command({"ping": 1}))
        await asyncio.sleep(0.02)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert (await second)["ok"] == 1.0
        assert fake.calls == 2  # the second caller connected itself
        await client.close()


async def test_a_failed_connect_reaches_every_waiter_and_may_be_retried(fake_dns: Any) -> None:
    async with ReplicaSet(1) as rs:
        fake = fake_dns(rs.members[0].address)
        fake.fail = True
        client = AsyncMongoClient("mongodb+srv://cluster.example.com/?tls=false")
        results = await asyncio.gather(client.aconnect(), client.aconnect(), return_exceptions=True)
        assert all(isinstance(r, ConfigurationError) for r in results)
        fake.fail = False
        assert (await client.admin_command({"ping": 1}))["ok"] == 1.0
        await client.close()
