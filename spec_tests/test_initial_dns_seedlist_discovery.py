"""The initial-dns-seedlist-discovery suite against a real DNS server (dnsmasq on 127.0.0.1
serving the records the suite's README lists), through dnspython's asyncio resolver."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from asyncmongo.core.address import format_address
from asyncmongo.core.uri import ClientOptions, parse
from asyncmongo.errors import ConfigurationError
from asyncmongo.runtime.srv import DnspythonResolver, resolve_srv_options
from spec_tests.support.uri_cases import DATA, assert_options
from tests.support.dns_server import DnsServer

pytestmark = pytest.mark.dns

SUITE = DATA / "initial-dns-seedlist-discovery"


def _files(discovery_only: bool = False) -> list[Any]:
    params = []
    for path in sorted(SUITE.glob("**/*.json")):
        case = json.loads(path.read_text())
        if not discovery_only or _asserts_discovery(case):
            params.append(pytest.param(case, id=str(path.relative_to(SUITE).with_suffix(""))))
    return params


def _asserts_discovery(case: dict[str, Any]) -> bool:
    return not case.get("error") and bool({"hosts", "numHosts"} & case.keys())


@pytest.fixture(scope="module")
def dns_server() -> Iterator[DnsServer]:
    reason = DnsServer.unavailable_reason()
    if reason is not None:
        print(reason)
        pytest.skip(reason)
    with DnsServer.from_seedlist_readme() as server:
        yield server


async def _resolve(uri: str, server: DnsServer) -> ClientOptions:
    resolver = DnspythonResolver([server.host], server.port, timeout_s=2.0)
    options, _ = await resolve_srv_options(parse(uri), resolver, random.Random(7))
    return options


@pytest.mark.parametrize("case", _files())
async def test_seedlist(case: dict[str, Any], dns_server: DnsServer) -> None:
    if case.get("error"):
        with pytest.raises(ConfigurationError):
            await _resolve(case["uri"], dns_server)
        return
    options = await _resolve(case["uri"], dns_server)
    seeds = [format_address(address) for address in options.hosts]
    if "seeds" in case:
        assert sorted(seeds) == sorted(case["seeds"])
    if "numSeeds" in case:
        assert len(seeds) == case["numSeeds"]
    assert_options(case.get("options", {}), options.options)
    _check_parsed_options(case.get("parsed_options", {}), options)


def _check_parsed_options(expected: dict[str, Any], options: ClientOptions) -> None:
    credential = options.credential
    for key, value in expected.items():
        if key == "user":
            assert credential is not None and credential.username == value
        elif key == "password":
            assert credential is not None and credential.password == value
        elif key in ("db", "auth_database", "defaultDatabase"):
            assert options.database == value
        else:
            raise AssertionError(f"unknown parsed_options key {key!r}")


@pytest.mark.parametrize("case", _files(discovery_only=True))
def test_seedlist_discovered_hosts(case: dict[str, Any]) -> None:
    pytest.skip(
        "'hosts'/'numHosts' and 'ping' need the deployment the README describes (a TLS "
        "replica set / sharded cluster / load balancer on localhost) to run SDAM against; "
        "they are to be run against asyncmongo.testing's simulated deployment by the "
        "topology work, not by the DNS seedlist resolution tested here"
    )
