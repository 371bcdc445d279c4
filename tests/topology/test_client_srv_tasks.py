"""The client's SRV poller is one of the client's own tasks (issue #8): started through the
client's TaskSet (a clean contextvars context, not the caller's), and cancelled and awaited by
``close()`` like the monitors, so nothing of the driver is left pending afterwards.

DNS is faked: the initial resolution names a local port nobody listens on (the topology stays
Unknown, so the poller does rescan) and the poller's resolver records what it is asked.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import socket
from typing import Any

import pytest

import asyncmongo.runtime.client_runtime as client_module
from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.uri import SrvRecord
from asyncmongo.runtime.srv import SrvAnswer, SrvPoller

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


def _closed_port() -> int:
    """A local port with nothing listening (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeResolver:
    """The poller's resolver: notes the request context it runs in, answers no change."""

    def __init__(self) -> None:
        self.contexts: list[str] = []
        self.asked = asyncio.Event()

    async def resolve_srv(self, name: str) -> SrvAnswer:
        self.contexts.append(REQUEST.get())
        self.asked.set()
        return SrvAnswer((SrvRecord("a.example.com", 27017),), 60)

    async def resolve_txt(self, name: str) -> list[list[bytes]]:
        return []


@pytest.fixture
def srv_client(monkeypatch: pytest.MonkeyPatch) -> tuple[AsyncMongoClient, FakeResolver]:
    port = _closed_port()
    resolver = FakeResolver()

    async def resolve(options: Any, resolver_: Any = None) -> tuple[Any, SrvAnswer]:
        hosts = (("127.0.0.1", port),)
        return dataclasses.replace(options, hosts=hosts), SrvAnswer((), 0)  # TTL 0: the floor

    monkeypatch.setattr(client_module, "resolve_srv_options", resolve)
    monkeypatch.setattr(client_module, "DnspythonResolver", lambda: resolver)
    # Rescan every 10 ms instead of the spec's 60 s floor, so the test sees a rescan.
    monkeypatch.setattr(
        client_module, "SrvPoller", functools.partial(SrvPoller, min_interval_s=0.01)
    )
    uri = "mongodb+srv://cluster.example.com/?tls=false&heartbeatFrequencyMS=500"
    return AsyncMongoClient(uri), resolver


def _driver_tasks() -> list[asyncio.Task[Any]]:
    current = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not current and not t.done()]


async def test_the_srv_poller_runs_in_the_client_task_set_with_a_clean_context(
    srv_client: tuple[AsyncMongoClient, FakeResolver],
) -> None:
    client, resolver = srv_client
    token = REQUEST.set("request-42")  # the application's context when it first connects
    try:
        await client.aconnect()
    finally:
        REQUEST.reset(token)
    tasks = client._tasks
    assert tasks is not None
    owned = {t.get_name() for t in tasks._tasks}
    assert "asyncmongo-srv-poller cluster.example.com" in owned, owned
    await asyncio.wait_for(resolver.asked.wait(), 5)
    assert resolver.contexts and set(resolver.contexts) == {"none"}, resolver.contexts
    await client.close()


async def test_close_leaves_no_task_pending_with_an_srv_uri(
    srv_client: tuple[AsyncMongoClient, FakeResolver],
) -> None:
    client, resolver = srv_client
    before = set(_driver_tasks())
    await client.aconnect()
    await asyncio.wait_for(resolver.asked.wait(), 5)
    assert client._runtime is not None
    poller = client._runtime.poller
    assert poller is not None and "running" in repr(poller)
    await client.close()
    left = [t for t in _driver_tasks() if t not in before]
    assert left == [], left
    assert "stopped" in repr(poller)
    assert client._tasks is not None and len(client._tasks) == 0
