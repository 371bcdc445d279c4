"""``python -m asyncmongo``: every command against a simulated deployment started here."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys

import pytest

from asyncmongo.cli import run
from asyncmongo.cli.commands import percentile
from asyncmongo.cli.main import build_parser
from asyncmongo.cli.view import (
    CLEAR_SCREEN,
    PoolCounts,
    describe_event,
    is_chatty,
    render_topology,
)
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.monitoring import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCreatedEvent,
)
from asyncmongo.testing import ReplicaSet, Standalone


async def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = await run(list(argv), out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", ["ping", "hello", "topology", "bench"])
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    assert f"python -m asyncmongo {command}" in capsys.readouterr().out


def test_module_runs_and_a_driver_error_is_one_line_and_status_1() -> None:
    env_run = [sys.executable, "-m", "asyncmongo"]
    helped = subprocess.run([*env_run, "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "topology" in helped.stdout
    failed = subprocess.run(
        [*env_run, "ping", "mongodb://127.0.0.1:1/", "--timeout-ms", "200"],
        capture_output=True, text=True, timeout=60,
    )
    assert failed.returncode == 1
    assert failed.stderr.startswith("error: ServerSelectionTimeoutError: ")
    assert "Traceback" not in failed.stderr


async def test_ping_and_hello_against_a_standalone() -> None:
    async with Standalone() as server:
        status, out, _ = await cli("ping", server.uri)
        assert status == 0 and out.startswith("ok: ping answered in ")
        assert "(Single)" in out
        status, out, _ = await cli("hello", server.uri)
        assert status == 0 and json.loads(out)["isWritablePrimary"] is True


async def test_a_bad_uri_prints_the_drivers_message() -> None:
    status, out, err = await cli("hello", "mongodb://")
    assert status == 1 and out == ""
    assert err.startswith("error: InvalidURI: ")


async def test_topology_prints_every_member_of_a_replica_set() -> None:
    async with ReplicaSet(members=3) as rs:
        status, out, _ = await cli("topology", rs.uri)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "ReplicaSetWithPrimary  set rs0  3 servers"
    assert sum("RSPrimary" in line for line in lines) == 1
    assert sum("RSSecondary" in line for line in lines) == 2


async def test_topology_of_an_unreachable_server_shows_it_and_fails() -> None:
    status, out, err = await cli("topology", "mongodb://127.0.0.1:1/", "--timeout-ms", "300")
    assert status == 1
    assert "127.0.0.1:1" in out and "Unknown" in out and "error: " in out
    assert err.startswith("error: ServerSelectionTimeoutError: no server")


async def test_watch_ends_after_count_events() -> None:
    async with Standalone() as server:
        status, out, _ = await cli("topology", server.uri, "--watch", "--count", "3")
    assert status == 0
    assert "TopologyOpeningEvent" in out and "ServerOpeningEvent" in out


async def test_watch_shows_a_step_down_as_it_happens() -> None:
    async with ReplicaSet(members=3) as rs:
        out = io.StringIO()
        watching = asyncio.create_task(
            run(["topology", rs.uri, "--watch", "--duration", "4"], out, io.StringIO())
        )
        for _ in range(600):  # until discovered
            if out.getvalue().count("-> RSSecondary") >= 2:
                break
            await asyncio.sleep(0.05)
        old_primary = rs.primary
        await rs.step_down()
        assert await asyncio.wait_for(watching, 30) == 0
    text = out.getvalue()
    assert old_primary is not None
    assert f"127.0.0.1:{old_primary.port} RSPrimary -> " in text
    assert "PoolClearedEvent" in text or "RSSecondary" in text


async def test_watch_verbose_shows_heartbeats() -> None:
    async with Standalone() as server:
        status, out, _ = await cli(
            "topology", server.uri, "--watch", "--verbose", "--duration", "0.5"
        )
    assert status == 0
    assert "ServerHeartbeatStartedEvent" in out


async def test_bench_reports_throughput_and_percentiles() -> None:
    async with Standalone() as server:
        status, out, _ = await cli(
            "bench", server.uri, "--duration", "0.3", "--concurrency", "4", "--op", "find_one"
        )
    assert status == 0
    assert "find_one on " in out and "ops/s" in out and "p99" in out


def test_percentile_is_nearest_rank() -> None:
    ordered = [float(n) for n in range(1, 101)]
    assert percentile(ordered, 50) == 50.0
    assert percentile(ordered, 99) == 99.0
    assert percentile([3.0], 90) == 3.0


async def test_live_watch_redraws_the_table_and_latest_events() -> None:
    async with Standalone() as server:
        status, out, _ = await cli(
            "topology", server.uri, "--watch", "--live", "--refresh", "0.1", "--duration", "0.6"
        )
    assert status == 0
    screens = out.split(CLEAR_SCREEN)[1:]
    assert len(screens) >= 2
    last = screens[-1]
    assert last.startswith("Single  1 servers")
    assert "Standalone" in last and "latest events:" in last and "TopologyOpeningEvent" in last


def test_render_topology_and_describe_event_are_plain_functions() -> None:
    address = ("db1.example.net", 27017)
    settings = TopologySettings(seeds=(address,))
    description = TopologyDescription.initial(settings)
    pools = PoolCounts()
    pools.apply(ConnectionCreatedEvent(address, 1))
    pools.apply(ConnectionCheckedOutEvent(address, 1, 0.5))
    table = render_topology(description, pools)
    assert table.splitlines()[0] == "Unknown  1 servers"
    assert "db1.example.net:27017  Unknown" in table and "1/1" in table
    line = describe_event(ConnectionCheckedInEvent(address, 1), pools, now=0.25)
    assert line.endswith("ConnectionCheckedInEvent           db1.example.net:27017 connection 1"
                         "  [1 open, 1 in use]")
    assert is_chatty(ConnectionCheckedInEvent(address, 1))
    assert not is_chatty(ConnectionCreatedEvent(address, 1))


async def test_ping_and_hello_answer_from_a_replica_set_without_primary() -> None:
    async with ReplicaSet(members=3) as rs:
        await rs.step_down(elect=False)
        status, out, _ = await cli("ping", rs.uri)
        assert status == 0 and out.endswith("by ReplicaSetNoPrimary\n")
        status, out, _ = await cli("hello", rs.uri)
        assert status == 0 and json.loads(out)["secondary"] is True
