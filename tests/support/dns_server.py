"""A real DNS server for the mongodb+srv:// tests: dnsmasq on 127.0.0.1, on a free port.

The records are read from the record tables of the initial-dns-seedlist-discovery README (so
they are exactly what the spec's test files need) or given explicitly. dnsmasq runs with
``--no-resolv --no-hosts`` and is authoritative (``--local``) for the test domain, so unknown
names get NXDOMAIN instead of being forwarded anywhere.

    with DnsServer.from_seedlist_readme() as server:
        resolver = DnspythonResolver([server.host], server.port)

If dnsmasq is not installed, ``DnsServer.unavailable_reason()`` says so and tests skip.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import dns.exception
import dns.rdatatype
import dns.resolver

from tests.support.processes import ChildServer

__all__ = ["SEEDLIST_README", "DnsRecords", "DnsServer"]

SEEDLIST_README = (
    Path(__file__).resolve().parents[2] / "spec_tests/data/initial-dns-seedlist-discovery/README.md"
)
_DNSMASQ_NAMES = ("dnsmasq", "/usr/sbin/dnsmasq")

#: Records the suite's test files need but its README table lacks: replica-set/
#: srv-service-name.json expects two seeds (27017 and 27018) from test22's custom service.
SEEDLIST_EXTRA_SRV = (
    ("_customname._tcp.test22.test.build.10gen.cc", "localhost.test.build.10gen.cc", 27018),
)


@dataclass(slots=True)
class DnsRecords:
    """A records (name, IPv4), SRV records (name, target, port), TXT records (name, strings)."""

    a: list[tuple[str, str]] = field(default_factory=list)
    srv: list[tuple[str, str, int]] = field(default_factory=list)
    txt: list[tuple[str, list[str]]] = field(default_factory=list)
    ttl: int = 86400

    @classmethod
    def from_readme(cls, path: Path = SEEDLIST_README) -> DnsRecords:
        """Parse the ``dns`` code block's three tables (A, SRV, TXT) of a spec README."""
        records = cls()
        block = re.search(r"```dns\n(.*?)```", path.read_text(), re.S)
        assert block, f"no dns record table in {path}"
        for line in block.group(1).splitlines():
            fields = line.split(None, 4)
            if len(fields) < 5 or fields[2] != "IN":
                continue
            name, ttl, _, kind, data = fields
            name = name.rstrip(".")
            records.ttl = int(ttl)
            if kind == "A":
                records.a.append((name, data.strip()))
            elif kind == "SRV":
                port, target = data.split()
                records.srv.append((name, target.rstrip("."), int(port)))
            elif kind == "TXT":
                records.txt.append((name, re.findall(r'"([^"]*)"', data)))
        return records

    def dnsmasq_args(self) -> list[str]:
        args = [f"--host-record={name},{ip}" for name, ip in self.a]
        args += [f"--srv-host={name},{target},{port}" for name, target, port in self.srv]
        args += [f"--txt-record={name},{','.join(parts)}" for name, parts in self.txt]
        return args


class DnsServer(ChildServer):
    """dnsmasq serving ``records`` on 127.0.0.1:<free port>; a context manager."""

    host = "127.0.0.1"

    def __init__(
        self, records: DnsRecords, authoritative_domains: tuple[str, ...], port: int = 0
    ) -> None:
        """``port`` 0 picks a free port; a fixed one lets a test restart the server with
        other records at the same address (e.g. to change SRV records under a poller)."""
        super().__init__()
        self.records = records
        self.domains = authoritative_domains
        self.port = port

    @classmethod
    def from_seedlist_readme(cls) -> DnsServer:
        """The records of the initial-dns-seedlist-discovery tests (domain 10gen.cc)."""
        records = DnsRecords.from_readme()
        records.srv.extend(SEEDLIST_EXTRA_SRV)
        return cls(records, ("10gen.cc",))

    @staticmethod
    def executable() -> str | None:
        return next((found for name in _DNSMASQ_NAMES if (found := shutil.which(name))), None)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if cls.executable() is None:
            return "dnsmasq not found (Debian package dnsmasq-base): real-DNS tests need it"
        return None

    def start(self, timeout_s: float = 10.0) -> None:
        executable = self.executable()
        if executable is None:
            raise RuntimeError(self.unavailable_reason())
        self.port = self.port or _free_udp_port()
        args = [
            executable,
            "--keep-in-foreground",
            "--no-resolv",
            "--no-hosts",
            "--no-dhcp-interface=",
            "--pid-file=",
            "--user=root",
            f"--listen-address={self.host}",
            "--bind-interfaces",
            f"--port={self.port}",
            f"--local-ttl={self.records.ttl}",
            *[f"--local=/{domain}/" for domain in self.domains],
            *self.records.dnsmasq_args(),
        ]
        self._spawn(args, f"dnsmasq on {self.host}:{self.port}", self._answers, timeout_s,
                    stderr=subprocess.PIPE)

    def _answers(self) -> bool:
        """The readiness probe: does dnsmasq answer a query for the served domain?"""
        resolver = dns.resolver.Resolver(configure=False)
        resolver.nameservers = [self.host]
        resolver.port = self.port
        resolver.lifetime = 0.5
        probe = f"probe.{self.domains[0]}" if self.domains else "localhost"
        try:
            resolver.resolve(probe, dns.rdatatype.A)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            pass  # an authoritative "no": the server is answering
        except dns.exception.DNSException:
            return False
        return True


def _free_udp_port() -> int:
    # dnsmasq needs the port free for both UDP and TCP; pick one that is free for both.
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free port for dnsmasq")
