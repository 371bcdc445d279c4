"""The control port of ``python -m asyncmongo.testing``: another process steps the primary
down, stops and starts members, sets fail points and network faults, and heals them.

The deployment runs in a subprocess; this test process is the "other process", talking to
the control port over TCP (and once through ``python -m asyncmongo.testing.control``, as a
shell would) while asyncmongo's client watches the effects.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import NetworkTimeout, OperationFailure
from asyncmongo.testing import ReplicaSet
from asyncmongo.testing.control import ControlServer, send

pytestmark = pytest.mark.timeout(120)


@dataclass
class Running:
    uri: str
    control: str

    async def command(self, line: str) -> dict[str, object]:
        (reply,) = await send(self.control, line)
        return reply


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "asyncmongo.testing", "replset", "3", "--fault-proxy",
        "--control-port", "0", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            uri = (await process.stdout.readline()).decode().strip()
            control = (await process.stdout.readline()).decode().strip()
        assert control.startswith("control 127.0.0.1:"), control
        yield Running(uri, control.split()[1])
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        _, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()[-800:]
    assert b"Traceback" not in stderr, stderr.decode()[-800:]


async def test_status_step_down_stop_and_start(running: Running) -> None:
    status = await running.command("status")
    assert status["ok"] is True and len(status["members"]) == 3  # type: ignore[arg-type]
    members: list[dict[str, object]] = status["members"]  # type: ignore[assignment]
    old_primary = next(m["host"] for m in members if m["role"] == "primary")
    client = AsyncMongoClient(running.uri, timeoutMS=10_000)
    try:
        await client.db.c.insert_one({"_id": 1})
        reply = await running.command("stepdown")
        assert reply["ok"] is True and reply["primary"] not in (None, old_primary)
        await client.db.c.insert_one({"_id": 2})  # the driver follows the new primary
        stopped = await running.command("stop 2")
        assert stopped == {"ok": True, "host": members[2]["host"], "running": False}
        status = await running.command("status")
        assert status["members"][2]["running"] is False  # type: ignore[index]
        assert (await running.command("start 2"))["running"] is True
        assert await client.db.c.count_documents({}) == 2
    finally:
        await client.close()


async def test_fail_point_from_outside(running: Running) -> None:
    fail_point = json.dumps({"configureFailPoint": "failCommand", "mode": {"times": 1},
                             "data": {"failCommands": ["find"], "errorCode": 2}})
    assert (await running.command(f"failpoint primary {fail_point}"))["ok"] is True
    client = AsyncMongoClient(running.uri, timeoutMS=10_000)
    try:
        with pytest.raises(OperationFailure) as info:
            await client.db.c.find_one({})
        assert info.value.code == 2
        assert await client.db.c.find_one({}) is None  # times: 1 is spent
    finally:
        await client.close()


async def test_network_fault_and_heal_from_outside(running: Running) -> None:
    client = AsyncMongoClient(running.uri, timeoutMS=2000, retryReads=False)
    try:
        await client.db.c.insert_one({"_id": 1})
        reply = await running.command("fault primary blackhole scope=existing")
        assert reply["ok"] is True and isinstance(reply["id"], int)
        with pytest.raises(NetworkTimeout):
            await client.db.c.find_one({})
        status = await running.command("status")
        assert any(m["faults"] for m in status["members"])  # type: ignore[attr-defined]
        assert (await running.command(f"heal {reply['id']}"))["healed"] == [reply["id"]]
        assert await client.db.c.find_one({"_id": 1}) == {"_id": 1}
        latency = await running.command("fault primary latency ms=100 jitter_ms=10")
        assert latency["ok"] is True
        assert (await running.command("heal"))["healed"] == [latency["id"]]
    finally:
        await client.close()


async def test_member_partition_from_a_shell(running: Running) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "asyncmongo.testing.control", running.control, "partition",
        "primary", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    reply = json.loads(stdout)
    assert reply["majority"] == "rest" and reply["primary"] not in reply["isolated"]
    assert (await running.command("heal all"))["ok"] is True


async def test_bad_commands_are_answered_not_fatal(running: Running) -> None:
    for line in ("frobnicate", "stop 9", "elect", "failpoint 0 {not json",
                 "fault 0 teleport", "fault 0 latency ms=fast", "heal 99", "'unbalanced"):
        reply = await running.command(line)
        assert reply["ok"] is False and reply["error"], line
    assert (await running.command("help"))["ok"] is True
    assert (await running.command("status"))["ok"] is True


async def test_in_process_control_server() -> None:
    async with ReplicaSet(2) as rs, ControlServer(rs) as control:
        replies = await send(control.address, "status", "fault 0 latency ms=1", "stepdown")
        assert [r["ok"] for r in replies] == [True, False, True]
        assert "without fault proxies" in str(replies[1]["error"])
        assert replies[2]["primary"] == rs.members[1].host
