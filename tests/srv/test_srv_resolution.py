"""mongodb+srv:// seedlist rules (the seedlist README's prose tests) and DNS error mapping."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator

import pytest

from asyncmongo.core.uri import SrvRecord, apply_srv_records, parse, parse_txt_records
from asyncmongo.errors import ConfigurationError
from asyncmongo.runtime.srv import DnspythonResolver, SrvPoller, resolve_srv_options
from tests.support.dns_server import DnsRecords, DnsServer


def resolve(uri: str, *targets: str, txt: list[list[bytes]] | None = None) -> list[str]:
    options = apply_srv_records(
        parse(uri), [SrvRecord(t, 27017) for t in targets], txt or [], random.Random(0)
    )
    return [host for host, _ in options.hosts]


@pytest.mark.parametrize("uri", ["mongodb+srv://localhost", "mongodb+srv://mongo.local"])
def test_prose_1_fewer_than_three_parts_parse(uri: str) -> None:
    assert parse(uri).is_srv


@pytest.mark.parametrize(
    ("uri", "target"),
    [
        ("mongodb+srv://localhost", "localhost.mongodb"),
        ("mongodb+srv://mongo.local", "test_1.evil.local"),
        ("mongodb+srv://blogs.mongodb.com", "blogs.evil.com"),
        # prose 3: identical to a host with fewer than three parts
        ("mongodb+srv://localhost", "localhost"),
        ("mongodb+srv://mongo.local", "mongo.local"),
        # prose 4: the shared part must be preceded by a '.'
        ("mongodb+srv://localhost", "test_1.cluster_1localhost"),
        ("mongodb+srv://mongo.local", "test_1.my_hostmongo.local"),
        ("mongodb+srv://blogs.mongodb.com", "cluster.testmongodb.com"),
    ],
)
def test_prose_2_to_4_targets_outside_the_domain_are_errors(uri: str, target: str) -> None:
    with pytest.raises(ConfigurationError, match="not in the domain"):
        resolve(uri, target)


def test_targets_in_the_domain_are_accepted() -> None:
    assert resolve("mongodb+srv://localhost", "a.localhost.") == ["a.localhost"]
    assert resolve("mongodb+srv://mongo.local", "x.y.MONGO.local") == ["x.y.mongo.local"]
    assert resolve("mongodb+srv://c.mongodb.com", "d.mongodb.com") == ["d.mongodb.com"]


def test_no_records_is_an_error_naming_the_query() -> None:
    with pytest.raises(ConfigurationError, match=r"_mongodb\._tcp\.a\.b\.c"):
        resolve("mongodb+srv://a.b.c")


def test_txt_rules() -> None:
    assert parse_txt_records([[b"replicaS", b"et=rs"]]) == {"replicaSet": "rs"}
    for bad in ([[b"a=1"], [b"b=2"]], [[b"ssl=false"]], [[b"authSource"]], [[b"w=1"]]):
        with pytest.raises(ConfigurationError):
            parse_txt_records(bad)


def test_uri_and_keywords_override_txt_and_tls_defaults_on() -> None:
    txt = [[b"replicaSet=fromtxt&authSource=txtdb"]]
    options = apply_srv_records(
        parse("mongodb+srv://u:p@a.b.c/?authSource=uri", replicaSet="kw"),
        [SrvRecord("x.b.c", 1)],
        txt,
        random.Random(),
    )
    assert options.replica_set == "kw"
    assert options.credential is not None and options.credential.source == "uri"
    assert options.tls is True
    off = parse("mongodb+srv://a.b.c/", tls=False)
    assert off.tls is False


def test_srv_max_hosts_uses_the_injected_rng() -> None:
    records = [SrvRecord(f"h{i}.b.c", 27017) for i in range(10)]
    picks = {
        apply_srv_records(
            parse("mongodb+srv://a.b.c/?srvMaxHosts=3"), records, [], random.Random(s)
        ).hosts
        for s in range(5)
    }
    assert all(len(hosts) == 3 for hosts in picks)
    assert len(picks) > 1  # different seeds, different subsets
    again = apply_srv_records(
        parse("mongodb+srv://a.b.c/?srvMaxHosts=3"), records, [], random.Random(0)
    )
    assert again.hosts in picks


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A UDP port where nothing ever answers: DNS queries to it time out."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


async def test_dns_timeout_is_a_configuration_error_naming_the_name(silent_port: int) -> None:
    resolver = DnspythonResolver(["127.0.0.1"], silent_port, timeout_s=0.3)
    with pytest.raises(ConfigurationError, match=r"_mongodb\._tcp\.test1\.example\.com.*timed out"):
        await resolve_srv_options(parse("mongodb+srv://test1.example.com"), resolver)


@pytest.mark.dns
async def test_custom_records_on_a_real_dns_server() -> None:
    reason = DnsServer.unavailable_reason()
    if reason:
        pytest.skip(reason)
    records = DnsRecords(
        srv=[
            ("_mongodb._tcp.db.example.net", "m1.example.net", 1),
            ("_mongodb._tcp.db.example.net", "m2.example.net", 2),
        ],
        txt=[("db.example.net", ["authSource=adm"])],
    )
    records.a.append(("m1.example.net", "127.0.0.1"))
    with DnsServer(records, ("example.net",)) as server:
        resolver = DnspythonResolver([server.host], server.port, timeout_s=2)
        options, answer = await resolve_srv_options(
            parse("mongodb+srv://u:p@db.example.net"), resolver
        )
        missing = parse("mongodb+srv://nothing.example.net")
        with pytest.raises(ConfigurationError, match=r"nothing\.example\.net.*does not exist"):
            await resolve_srv_options(missing, resolver)
    assert sorted(options.hosts) == [("m1.example.net", 1), ("m2.example.net", 2)]
    assert options.credential is not None and options.credential.source == "adm"
    assert answer.ttl == records.ttl


def _records(*ports: int) -> DnsRecords:
    return DnsRecords(srv=[("_mongodb._tcp.db.example.net", "m.example.net", p) for p in ports])


@pytest.mark.dns
async def test_poller_against_a_real_dns_server_whose_records_change() -> None:
    reason = DnsServer.unavailable_reason()
    if reason:
        pytest.skip(reason)
    changes: list[tuple[object, ...]] = []
    with DnsServer(_records(1, 2), ("example.net",)) as first:
        resolver = DnspythonResolver([first.host], first.port, timeout_s=0.5)
        options, answer = await resolve_srv_options(parse("mongodb+srv://db.example.net"), resolver)
        poller = SrvPoller(
            options,
            resolver=resolver,
            on_hosts_changed=changes.append,
            should_poll=lambda: True,
            initial_ttl_s=answer.ttl,
        )
        port = first.port
    await poller.rescan()  # the server is gone: the DNS error keeps the hosts
    assert changes == [] and sorted(poller.hosts) == [("m.example.net", 1), ("m.example.net", 2)]
    with DnsServer(_records(1, 3), ("example.net",), port=port):
        await poller.rescan()
    assert changes == [(("m.example.net", 1), ("m.example.net", 3))]
