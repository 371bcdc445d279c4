"""The initial-dns-seedlist-discovery suite against a real DNS server (dnsmasq on 127.0.0.1
serving the records the suite's README lists), through dnspython's asyncio resolver.

Three checks per file: the resolution itself (seeds, options, errors) through
``resolve_srv_options``; for error files, that an AsyncMongoClient refuses the URI; for the
others, the README's whole "Test Format and Use" through an AsyncMongoClient: seeds, options,
the topology's ``hosts``/``numHosts`` once SDAM has scanned, and ``ping``, against the
deployment the README describes, simulated by ``asyncmongo.testing`` on the ports the records
name (see ``spec_tests.support.seedlist``)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.address import format_address
from asyncmongo.core.uri import ClientOptions, parse
from asyncmongo.errors import ConfigurationError
from asyncmongo.runtime.srv import (
    DnspythonResolver,
    dns_nameservers_for_tests,
    resolve_srv_options,
)
from spec_tests.support.seedlist import (
    DEPLOYMENT_PORTS,
    SRV_TARGETS,
    busy_ports,
    deployment_for,
    resolve_test_domains,
    routing_unavailable_reason,
)
from spec_tests.support.uri_cases import DATA, assert_options
from tests.support import certs
from tests.support.dns_server import DnsServer

pytestmark = pytest.mark.dns

SUITE = DATA / "initial-dns-seedlist-discovery"
#: How long SDAM may take to reach the files' ``hosts`` (a local deployment: well under 1 s).
DISCOVERY_TIMEOUT_S = 10.0


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


@pytest.mark.parametrize("case", [p for p in _files() if p.values[0].get("error")])
async def test_seedlist_client_refuses(case: dict[str, Any], dns_server: DnsServer) -> None:
    """README: "drivers MUST verify that initializing the MongoClient throws an error": the
    client parses at construction and resolves SRV/TXT when it connects (its default resolver
    pointed at the local dnsmasq); one of the two raises ConfigurationError and no topology
    is started."""
    with dns_nameservers_for_tests([dns_server.host], dns_server.port):
        with pytest.raises(ConfigurationError):
            client = AsyncMongoClient(case["uri"])
            try:
                await client.aconnect()
            finally:
                assert client.topology_description.servers == {}
                await client.close()


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


def _discovery_files() -> list[Any]:
    """(directory, case) of every file that asserts ``hosts``/``numHosts`` after discovery."""
    params = []
    for path in sorted(SUITE.glob("**/*.json")):
        case = json.loads(path.read_text())
        if _asserts_discovery(case):
            kind = path.relative_to(SUITE).parts[0]
            rel = str(path.relative_to(SUITE).with_suffix(""))
            params.append(pytest.param(kind, case, id=rel))
    return params


@pytest.fixture(scope="module")
def seedlist_certs(tmp_path_factory: pytest.TempPathFactory) -> certs.CertFiles:
    """A CA and a server certificate for localhost and every SRV target of the records."""
    return certs.generate(tmp_path_factory.mktemp("seedlist-certs"), SRV_TARGETS)


@pytest.mark.parametrize(("kind", "case"), _discovery_files())
async def test_seedlist_discovered_hosts(
    kind: str, case: dict[str, Any], dns_server: DnsServer, seedlist_certs: certs.CertFiles
) -> None:
    """The README's "Test Format and Use": an AsyncMongoClient on the file's URI (its SRV and
    TXT lookups and the SRV targets' A records answered by the local dnsmasq) against the
    deployment the README describes (simulated on the ports the records name, TLS unless the
    URI turns it off): the seeds, then the topology's hosts once SDAM has scanned, then ping."""
    busy = busy_ports(DEPLOYMENT_PORTS[kind])
    if busy:
        reason = f"ports {busy} on 127.0.0.1 are taken; the {kind} deployment needs them"
        print(reason)
        pytest.skip(reason)
    tls_on = bool(case.get("options", {}).get("ssl", True))
    server_tls = seedlist_certs.server_context() if tls_on else None
    client_options: dict[str, Any] = {"serverSelectionTimeoutMS": 10_000}
    if tls_on:
        client_options["tlsCAFile"] = str(seedlist_certs.ca)
    unroutable = routing_unavailable_reason()
    if unroutable is not None:
        print(unroutable)
        pytest.skip(unroutable)
    with resolve_test_domains(dns_server):
        deployment = deployment_for(kind, server_tls)
        try:
            await deployment.start()
        except OSError as exc:  # taken since busy_ports looked (another test run on the box)
            await deployment.close()
            reason = f"the {kind} deployment cannot listen on its ports: {exc}"
            print(reason)
            pytest.skip(reason)
        try:
            client = AsyncMongoClient(case["uri"], **client_options)
            try:
                await client.aconnect()
                _check_client_seeds(case, client)
                assert_options(case.get("options", {}), client.options.options)
                await _wait_for_hosts(case, client)
                if case.get("ping", True):
                    reply = await client.admin_command({"ping": 1})
                    assert reply.get("ok") == 1
            finally:
                await client.close()
        finally:
            await deployment.close()


def _check_client_seeds(case: dict[str, Any], client: AsyncMongoClient) -> None:
    seeds = [format_address(address) for address in client.options.hosts]
    if "seeds" in case:
        assert sorted(seeds) == sorted(case["seeds"])
    if "numSeeds" in case:
        assert len(seeds) == case["numSeeds"]


async def _wait_for_hosts(case: dict[str, Any], client: AsyncMongoClient) -> None:
    """README: the set of ServerDescriptions "eventually matches" ``hosts`` / ``numHosts``."""

    def matches(hosts: list[str]) -> bool:
        if "hosts" in case and sorted(hosts) != sorted(case["hosts"]):
            return False
        return "numHosts" not in case or len(hosts) == case["numHosts"]

    loop = asyncio.get_running_loop()
    deadline = loop.time() + DISCOVERY_TIMEOUT_S
    while True:
        description = client.topology_description
        hosts = [format_address(address) for address in description.servers]
        if matches(hosts):
            return
        if loop.time() > deadline:
            expected = case.get("hosts", f"{case.get('numHosts')} hosts")
            raise AssertionError(
                f"after {DISCOVERY_TIMEOUT_S}s the topology has {sorted(hosts)}, not {expected} "
                f"({description!r})"
            )
        await asyncio.sleep(0.01)
