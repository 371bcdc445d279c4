"""Deployments on chosen ports, with members named as a test needs (``ports=``, ``port=``,
``host_name=``): what the DNS seedlist tests use to stand where the SRV records point."""

from __future__ import annotations

import socket

import pytest

from asyncmongo.testing import LoadBalanced, ReplicaSet, ShardedCluster
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(30)

HELLO = {"hello": 1, "$db": "admin"}


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


async def _hello(port: int) -> dict[str, object]:
    client = await RawClient.connect(port)
    try:
        return await client.command(HELLO)
    finally:
        await client.close()


async def test_replica_set_on_chosen_ports_names_members_by_host_name() -> None:
    ports = _free_ports(3)
    async with ReplicaSet(3, set_name="repl0", ports=ports, host_name="localhost") as rs:
        assert [member.port for member in rs.members] == ports
        names = [f"localhost:{port}" for port in ports]
        hello = await _hello(ports[1])
        assert hello["me"] == names[1] and hello["hosts"] == names
        assert hello["setName"] == "repl0" and hello["primary"] == names[0]
        assert rs.uri.startswith(f"mongodb://{','.join(names)}/")
        assert rs.primary is rs.member(names[0])


async def test_replica_set_ports_may_be_partial() -> None:
    (port,) = _free_ports(1)
    async with ReplicaSet(2, ports=[port]) as rs:
        assert rs.members[0].host == f"127.0.0.1:{port}"  # the default name
        assert rs.members[1].port not in (0, port)


async def test_mongos_and_load_balancer_on_chosen_ports() -> None:
    first, second, balancer = _free_ports(3)
    async with ShardedCluster(2, ports=[first, second], host_name="db.example") as cluster:
        assert [m.host for m in cluster.mongos] == [f"db.example:{first}", f"db.example:{second}"]
        assert (await _hello(second))["msg"] == "isdbgrid"
    async with LoadBalanced(port=balancer, host_name="lb.example") as lb:
        assert lb.server.host == f"lb.example:{balancer}"
        assert lb.uri == f"mongodb://lb.example:{balancer}/?loadBalanced=true"
