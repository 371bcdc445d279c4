"""pytest fixtures for simulated deployments (registered as the ``asyncmongo`` pytest11 entry
point): ``mongo_standalone``, ``mongo_replica_set`` (3 members), ``mongo_sharded`` (2 mongos)
and ``mongo_load_balanced``; ``mongo_proxied_standalone`` and ``mongo_proxied_replica_set``
put every member behind a :class:`~asyncmongo.testing.proxy.FaultProxy` (network faults on
cue: ``member.proxy.blackhole()``...); ``mongo_query_analyzer`` is a
:class:`~asyncmongo.testing.query_analyzer.QueryAnalyzer` (mongocryptd's part in automatic
encryption: ``AutoEncryptionOpts(..., **mongo_query_analyzer.auto_encryption_options())``).
Async and function-scoped: each test gets a fresh deployment,
closed afterwards. Needs an asyncio pytest plugin (pytest-asyncio or anyio)."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from asyncmongo.testing.deployment import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
from asyncmongo.testing.query_analyzer import QueryAnalyzer


def _async_fixture() -> Callable[[Any], Any]:
    """pytest-asyncio's fixture decorator when it is installed (works in its strict mode
    too), else pytest's (for anyio's plugin, which runs async fixtures itself)."""
    if importlib.util.find_spec("pytest_asyncio") is not None:
        import pytest_asyncio

        decorator: Callable[[Any], Any] = pytest_asyncio.fixture
        return decorator
    return pytest.fixture


fixture = _async_fixture()


@fixture
async def mongo_standalone() -> AsyncIterator[Standalone]:
    async with Standalone() as deployment:
        yield deployment


@fixture
async def mongo_replica_set() -> AsyncIterator[ReplicaSet]:
    async with ReplicaSet(3) as deployment:
        yield deployment


@fixture
async def mongo_sharded() -> AsyncIterator[ShardedCluster]:
    async with ShardedCluster(mongos=2) as deployment:
        yield deployment


@fixture
async def mongo_load_balanced() -> AsyncIterator[LoadBalanced]:
    async with LoadBalanced() as deployment:
        yield deployment


@fixture
async def mongo_proxied_standalone() -> AsyncIterator[Standalone]:
    async with Standalone(fault_proxy=True) as deployment:
        yield deployment


@fixture
async def mongo_proxied_replica_set() -> AsyncIterator[ReplicaSet]:
    async with ReplicaSet(3, fault_proxy=True) as deployment:
        yield deployment


@fixture
async def mongo_query_analyzer() -> AsyncIterator[QueryAnalyzer]:
    async with QueryAnalyzer() as analyzer:
        yield analyzer
