"""The unified runner's targets: simulated deployments on demand, and MONGODB_URI probing."""

from __future__ import annotations

import pytest

from asyncmongo.testing.deployment import ReplicaSet, Standalone
from spec_tests.unified.target import TargetPool, direct_uri, uri_for_host


async def test_simulated_targets_are_started_once_per_kind() -> None:
    pool = TargetPool()
    try:
        target, internal = await pool.get("single")
        again, same = await pool.get("single")
        assert (again, same) == (target, internal)
        assert target.simulated and target.info.topology == "single"
        secured, _ = await pool.get("single", auth=True)
        assert secured.info.auth and "@" in secured.uri
        reply = await internal.admin_command({"ping": 1})
        assert reply["ok"] == 1
    finally:
        await pool.close()


async def test_mongodb_uri_is_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    async with ReplicaSet(3) as deployment:
        monkeypatch.setenv("MONGODB_URI", deployment.uri)
        pool = TargetPool()
        try:
            target, _ = await pool.get("single")  # the topology asked for is ignored
            assert not target.simulated
            assert target.info.topology == "replicaset"
            assert target.info.version[0] >= 4
        finally:
            await pool.close()


async def test_standalone_uri_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    async with Standalone() as deployment:
        monkeypatch.setenv("MONGODB_URI", deployment.uri)
        pool = TargetPool()
        try:
            target, _ = await pool.get("replicaset")
            assert target.info.topology == "single"
        finally:
            await pool.close()


def test_uri_rewrites() -> None:
    uri = "mongodb://u:p@a:1,b:2/?replicaSet=rs0&tls=true"
    assert direct_uri(uri) == "mongodb://u:p@a:1/?tls=true"
    assert uri_for_host(uri, "b:2") == "mongodb://u:p@b:2/?tls=true&directConnection=true"
