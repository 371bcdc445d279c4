"""SrvPoller (polling-srv-records-for-mongos-discovery) over a scripted resolver."""

from __future__ import annotations

import asyncio
import random

import pytest

from asyncmongo.core.address import Address
from asyncmongo.core.uri import ClientOptions, SrvRecord, apply_srv_records, parse
from asyncmongo.errors import ConfigurationError, InvalidOperation
from asyncmongo.runtime.srv import SrvAnswer, SrvPoller

HOST = "localhost.test.build.10gen.cc"


def record(port: int, target: str = HOST) -> SrvRecord:
    return SrvRecord(target, port)


class ScriptedResolver:
    """Answers SRV queries from ``records``; ``fail`` makes them raise like a DNS error."""

    def __init__(self, records: list[SrvRecord], ttl: int = 0) -> None:
        self.records = records
        self.ttl = ttl
        self.fail = False
        self.queries: list[str] = []

    async def resolve_srv(self, name: str) -> SrvAnswer:
        self.queries.append(name)
        if self.fail:
            raise ConfigurationError(f"DNS SRV lookup of {name!r} failed: timed out")
        return SrvAnswer(tuple(self.records), self.ttl)

    async def resolve_txt(self, name: str) -> list[list[bytes]]:
        return []


class Harness:
    def __init__(self, ports: list[int], uri_options: str = "", should_poll: bool = True) -> None:
        options = parse(f"mongodb+srv://test1.test.build.10gen.cc/?{uri_options}")
        self.options: ClientOptions = apply_srv_records(
            options, [record(p) for p in ports], [], random.Random(1)
        )
        self.resolver = ScriptedResolver([record(p) for p in ports])
        self.changes: list[tuple[Address, ...]] = []
        self.changed = asyncio.Event()
        self.poll = should_poll
        self.poller = SrvPoller(
            self.options,
            resolver=self.resolver,
            on_hosts_changed=self._on_change,
            should_poll=lambda: self.poll,
            rng=random.Random(2),
            min_interval_s=0.005,
        )

    def _on_change(self, hosts: tuple[Address, ...]) -> None:
        self.changes.append(hosts)
        self.changed.set()

    async def next_change(self) -> tuple[Address, ...]:
        async with asyncio.timeout(2):
            await self.changed.wait()
        self.changed.clear()
        return self.changes[-1]

    async def wait_queries(self, count: int) -> None:
        async with asyncio.timeout(2):
            while len(self.resolver.queries) < count:  # noqa: ASYNC110 (polls a plain list)
                await asyncio.sleep(0.001)


def ports(hosts: tuple[Address, ...]) -> list[int | None]:
    return sorted(port for _, port in hosts)


async def test_addition_of_a_record() -> None:
    h = Harness([27017, 27018])
    h.poller.start()
    h.resolver.records = [record(27017), record(27018), record(27019)]
    assert ports(await h.next_change()) == [27017, 27018, 27019]
    await h.poller.close()


async def test_removal_of_a_record() -> None:
    h = Harness([27017, 27018])
    h.poller.start()
    h.resolver.records = [record(27017)]
    assert ports(await h.next_change()) == [27017]
    await h.poller.close()


async def test_replacement_keeps_unchanged_hosts_in_place() -> None:
    h = Harness([27017, 27018])
    h.poller.start()
    h.resolver.records = [record(27019), record(27017)]
    hosts = await h.next_change()
    assert hosts == ((HOST, 27017), (HOST, 27019))
    await h.poller.close()


async def test_srv_max_hosts_keeps_existing_and_adds_random_new_ones() -> None:
    h = Harness([27017, 27018], "srvMaxHosts=2")
    assert len(h.options.hosts) == 2
    h.poller.start()
    h.resolver.records = [record(p) for p in (27017, 27018, 27019, 27020)]
    await h.wait_queries(3)
    assert h.changes == []  # already at srvMaxHosts: nothing added
    h.resolver.records = [record(p) for p in (27017, 27019, 27020)]
    hosts = await h.next_change()
    assert len(hosts) == 2
    assert hosts[0] == (HOST, 27017)
    assert hosts[1] in {(HOST, 27019), (HOST, 27020)}
    await h.poller.close()


async def test_srv_max_hosts_fills_up_to_the_limit() -> None:
    h = Harness([27017], "srvMaxHosts=3")
    h.poller.start()
    h.resolver.records = [record(p) for p in (27017, 27018, 27019, 27020, 27021)]
    hosts = await h.next_change()
    assert len(hosts) == 3 and hosts[0] == (HOST, 27017)
    await h.poller.close()


async def test_dns_failure_keeps_the_old_hosts_and_retries_at_heartbeat() -> None:
    h = Harness([27017, 27018], "heartbeatFrequencyMS=500")
    h.resolver.fail = True
    await h.poller.rescan()
    assert h.changes == []
    assert h.poller.hosts == h.options.hosts
    h.resolver.fail = False
    h.resolver.records = []  # an empty answer is treated the same way
    await h.poller.rescan()
    h.resolver.records = [record(27017, "evil.example.com")]  # no verified host either
    await h.poller.rescan()
    assert h.changes == [] and h.poller.hosts == h.options.hosts


async def test_invalid_targets_are_ignored_not_raised() -> None:
    h = Harness([27017, 27018])
    h.resolver.records = [record(27017), record(27019, "localhost.evil.build.10gen.cc")]
    await h.poller.rescan()
    assert h.poller.hosts == ((HOST, 27017),)


async def test_rescan_interval_follows_the_ttl_with_a_floor() -> None:
    h = Harness([27017])
    h.resolver.ttl = 120
    await h.poller.rescan()
    assert "every 120s" in repr(h.poller)
    h.resolver.ttl = 0
    await h.poller.rescan()
    assert "every 0.005s" in repr(h.poller)


async def test_no_rescan_while_the_topology_is_not_sharded_or_unknown() -> None:
    h = Harness([27017, 27018], should_poll=False)
    h.poller.start()
    await asyncio.sleep(0.05)
    assert h.resolver.queries == []
    h.poll = True
    await h.wait_queries(1)
    await h.poller.close()


async def test_close_stops_the_task_promptly() -> None:
    h = Harness([27017])
    h.poller.start()
    await h.wait_queries(2)
    await h.poller.close()
    assert "stopped" in repr(h.poller)
    seen = len(h.resolver.queries)
    await asyncio.sleep(0.03)
    assert len(h.resolver.queries) == seen
    await h.poller.close()  # idempotent
    poller_tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("asyncmongo-srv")]
    assert poller_tasks == []


async def test_close_while_a_query_hangs() -> None:
    h = Harness([27017])
    blocked = asyncio.Event()

    async def hang(name: str) -> SrvAnswer:
        blocked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    h.resolver.resolve_srv = hang  # type: ignore[method-assign]
    h.poller.start()
    async with asyncio.timeout(2):
        await blocked.wait()
        await h.poller.close()


async def test_cancelling_the_closer_still_ends_the_task() -> None:
    h = Harness([27017])
    h.poller.start()
    closer = asyncio.ensure_future(h.poller.close())
    await asyncio.sleep(0)  # the closer has cancelled the task and awaits it
    closer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closer
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() if t.get_name().startswith("asyncmongo-srv")] == []


def test_not_for_load_balanced_or_plain_uris() -> None:
    lb = apply_srv_records(
        parse("mongodb+srv://test3.test.build.10gen.cc/?loadBalanced=true"),
        [record(1)],
        [],
        random.Random(),
    )
    for options in (lb, parse("mongodb://localhost")):
        with pytest.raises(InvalidOperation):
            SrvPoller(
                options,
                resolver=ScriptedResolver([]),
                on_hosts_changed=lambda hosts: None,
                should_poll=lambda: True,
            )


async def test_start_twice_is_an_error() -> None:
    h = Harness([27017])
    h.poller.start()
    with pytest.raises(InvalidOperation):
        h.poller.start()
    await h.poller.close()


async def test_compares_with_the_topology_hosts_when_given() -> None:
    h = Harness([27017, 27018])
    topology_hosts = [(HOST, 27017)]  # SDAM already dropped 27018
    poller = SrvPoller(
        h.options,
        resolver=h.resolver,
        on_hosts_changed=h.changes.append,
        should_poll=lambda: True,
        current_hosts=lambda: topology_hosts,
    )
    await poller.rescan()
    assert h.changes == [((HOST, 27017), (HOST, 27018))]


async def test_a_failing_callback_does_not_end_polling(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness([27017])

    def broken(hosts: tuple[Address, ...]) -> None:
        raise RuntimeError("topology bug")

    poller = SrvPoller(
        h.options,
        resolver=h.resolver,
        on_hosts_changed=broken,
        should_poll=lambda: True,
        min_interval_s=0.005,
    )
    h.resolver.records = [record(27018)]
    poller.start()
    await h.wait_queries(3)
    await poller.close()
    assert "topology bug" in caplog.text
