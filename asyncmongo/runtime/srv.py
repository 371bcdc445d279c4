"""mongodb+srv:// I/O: DNS resolution with dnspython's asyncio resolver, and SRV polling.

The rules live in the pure ``asyncmongo.core.uri.srv``; this module only asks DNS and hands
the answers over. Every DNS failure becomes a ConfigurationError naming the DNS name that
failed (seedlist spec: "The error SHALL include the reason why they could not be found").

``SrvPoller`` implements specs/polling-srv-records-for-mongos-discovery: a task owned by its
creator, rescanning every rescanSRVIntervalMS (the lowest SRV TTL, at least 60 s; the heartbeat
frequency after a failed or empty rescan), only while ``should_poll()`` says the topology is
Sharded or Unknown, and ended by ``await poller.close()``.

Test hook (internal, not API): ``with dns_nameservers_for_tests(["127.0.0.1"], port):`` makes
every ``DnspythonResolver()`` built without nameservers, so the client's SRV/TXT lookups and
its SRV poller, ask that DNS server instead of the system's (the seedlist spec tests serve the
records from a local dnsmasq). Nothing else reads it; it is process-wide while the block runs.

dnspython is imported on first use, by a ``DnspythonResolver``: it takes about 70 ms to
import, and a client of a plain ``mongodb://`` URI never asks DNS for anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from asyncmongo.core.address import Address
from asyncmongo.core.uri import ClientOptions, SrvRecord, apply_srv_records, polled_hosts
from asyncmongo.core.uri.srv import Shuffler, is_valid_target, srv_query_name
from asyncmongo.errors import ConfigurationError, InvalidOperation

if TYPE_CHECKING:
    import dns.asyncresolver

__all__ = [
    "DnsResolver",
    "DnspythonResolver",
    "SrvAnswer",
    "SrvPoller",
    "dns_nameservers_for_tests",
    "resolve_srv_options",
]

_log = logging.getLogger("asyncmongo.srv")

#: Starts an owned task: (coroutine, task name) -> the task (``TaskSet.spawn``).
Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]

#: Polling spec: rescanSRVIntervalMS "MUST NOT be lower than 60 seconds".
MIN_RESCAN_INTERVAL_S = 60.0

#: Set only by ``dns_nameservers_for_tests``: (nameservers, port) for default resolvers.
_test_nameservers: tuple[tuple[str, ...], int] | None = None


@contextlib.contextmanager
def dns_nameservers_for_tests(nameservers: Sequence[str], port: int = 53) -> Iterator[None]:
    """Internal test hook: inside the block, ``DnspythonResolver()`` without explicit
    nameservers (what AsyncMongoClient builds for mongodb+srv://) asks ``nameservers`` on
    ``port`` instead of the system's DNS configuration. Not thread- or loop-local."""
    global _test_nameservers
    previous, _test_nameservers = _test_nameservers, (tuple(nameservers), port)
    try:
        yield
    finally:
        _test_nameservers = previous


@dataclass(frozen=True, slots=True)
class SrvAnswer:
    """The SRV records of one name and the TTL of the answer (seconds)."""

    records: tuple[SrvRecord, ...]
    ttl: int


class DnsResolver(Protocol):
    """What mongodb+srv:// needs from DNS (a fake one is enough for tests)."""

    async def resolve_srv(self, name: str) -> SrvAnswer: ...

    async def resolve_txt(self, name: str) -> list[list[bytes]]: ...


class DnspythonResolver:
    """``DnsResolver`` over ``dns.asyncresolver``; nameservers and port are injectable so
    tests can point it at a local DNS server. ``timeout_s`` bounds each whole lookup."""

    def __init__(
        self,
        nameservers: Sequence[str] | None = None,
        port: int = 53,
        timeout_s: float = 5.0,
    ) -> None:
        import dns.asyncresolver
        import dns.exception

        if nameservers is None and _test_nameservers is not None:
            nameservers, port = _test_nameservers
        try:
            self._resolver: dns.asyncresolver.Resolver = dns.asyncresolver.Resolver(
                configure=nameservers is None
            )
        except dns.exception.DNSException as exc:  # e.g. no /etc/resolv.conf
            raise ConfigurationError(f"cannot configure the DNS resolver: {exc}") from exc
        if nameservers is not None:
            self._resolver.nameservers = list(nameservers)
            self._resolver.port = port
        self._resolver.lifetime = timeout_s

    def __repr__(self) -> str:
        return f"DnspythonResolver(nameservers={self._resolver.nameservers!r})"

    async def resolve_srv(self, name: str) -> SrvAnswer:
        import dns.exception
        import dns.rdatatype

        try:
            answer = await self._resolver.resolve(name, dns.rdatatype.SRV)
        except (dns.exception.DNSException, OSError) as exc:
            raise _dns_error("SRV", name, exc) from exc
        records = tuple(
            SrvRecord(target=rdata.target.to_text(omit_final_dot=True), port=rdata.port)
            for rdata in answer
        )
        ttl = answer.rrset.ttl if answer.rrset is not None else 0
        return SrvAnswer(records=records, ttl=ttl)

    async def resolve_txt(self, name: str) -> list[list[bytes]]:
        import dns.exception
        import dns.rdatatype
        import dns.resolver

        try:
            answer = await self._resolver.resolve(name, dns.rdatatype.TXT)
        except (dns.resolver.NoAnswer, dns.resolver.NXDOMAIN):
            return []  # no TXT record: no default options
        except (dns.exception.DNSException, OSError) as exc:
            raise _dns_error("TXT", name, exc) from exc
        return [list(rdata.strings) for rdata in answer]


def _dns_error(kind: str, name: str, exc: Exception) -> ConfigurationError:
    import dns.exception
    import dns.resolver

    if isinstance(exc, dns.resolver.NXDOMAIN):
        reason = "the name does not exist"
    elif isinstance(exc, dns.resolver.NoAnswer):
        reason = f"there is no {kind} record"
    elif isinstance(exc, dns.exception.Timeout):
        reason = "the DNS query timed out"
    else:
        reason = f"{type(exc).__name__}: {exc}"
    return ConfigurationError(f"DNS {kind} lookup of {name!r} failed: {reason}")


async def resolve_srv_options(
    options: ClientOptions,
    resolver: DnsResolver | None = None,
    rng: Shuffler | None = None,
) -> tuple[ClientOptions, SrvAnswer]:
    """Resolve a mongodb+srv:// URI's SRV and TXT records (both before any connection) and
    return the completed options, with the SRV answer (its TTL starts the poller)."""
    if not options.is_srv or options.srv_host is None:
        raise InvalidOperation("resolve_srv_options needs the options of a mongodb+srv:// URI")
    resolver = resolver or DnspythonResolver()
    name = srv_query_name(options.srv_host, options.srv_service_name)
    try:
        async with asyncio.TaskGroup() as group:  # both queries at once, neither orphaned
            srv = group.create_task(resolver.resolve_srv(name))
            txt = group.create_task(resolver.resolve_txt(options.srv_host))
    except* ConfigurationError as errors:
        raise errors.exceptions[0] from None
    answer = srv.result()
    resolved = apply_srv_records(options, answer.records, txt.result(), rng or random.Random())
    return resolved, answer


class SrvPoller:
    """Rescans the SRV records of a mongodb+srv:// client and reports host list changes.

    ``on_hosts_changed(hosts)`` gets the new seed list when it differs from the current one
    (hosts still present keep their place; see ``polled_hosts``). Not for load-balanced
    clients (load-balancers spec: "the driver MUST NOT poll for changes in the SRV record").
    """

    def __init__(
        self,
        options: ClientOptions,
        *,
        resolver: DnsResolver,
        on_hosts_changed: Callable[[tuple[Address, ...]], None],
        should_poll: Callable[[], bool],
        initial_ttl_s: float | None = None,
        current_hosts: Callable[[], Sequence[Address]] | None = None,
        rng: Shuffler | None = None,
        min_interval_s: float = MIN_RESCAN_INTERVAL_S,
    ) -> None:
        """``current_hosts`` returns the topology's hosts (the spec compares the answer with
        them); without it the poller compares with the last list it reported."""
        if not options.is_srv or options.srv_host is None or options.load_balanced:
            raise InvalidOperation("SRV polling is only for non-load-balanced mongodb+srv://")
        self._srv_host = options.srv_host
        self._name = srv_query_name(options.srv_host, options.srv_service_name)
        self._srv_max_hosts = options.srv_max_hosts
        self._heartbeat_s = options.heartbeat_frequency_ms / 1000
        self._resolver = resolver
        self._on_hosts_changed = on_hosts_changed
        self._should_poll = should_poll
        self._rng: Shuffler = rng or random.Random()
        self._min_interval_s = min_interval_s
        self._hosts = options.hosts
        self._current_hosts = current_hosts or (lambda: self._hosts)
        self._interval_s = self._rescan_interval(initial_ttl_s)
        self._task: asyncio.Task[None] | None = None
        self._rescans = 0

    def __repr__(self) -> str:
        state = "running" if self._task is not None and not self._task.done() else "stopped"
        return (
            f"<SrvPoller {self._name} {state}, {len(self._hosts)} hosts, "
            f"every {self._interval_s:g}s, {self._rescans} rescans>"
        )

    @property
    def hosts(self) -> tuple[Address, ...]:
        """The seed list as of the last successful rescan."""
        return self._hosts

    def start(self, spawn: Spawn | None = None) -> None:
        """Start the polling task (once).

        ``spawn(coro, name)`` is the owner's task starter: the client passes its TaskSet's, so
        the poller runs in the client's task set with a clean contextvars context and the
        client's ``close()`` awaits it like every other background task. Without
        it (standalone use, tests) the poller starts a plain task on the running loop.
        """
        if self._task is not None:
            raise InvalidOperation("the SRV poller was already started")
        name = f"asyncmongo-srv-poller {self._srv_host}"
        if spawn is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=name)
        else:
            self._task = spawn(self._run(), name)

    async def close(self) -> None:
        """Stop polling: cancel the task and wait for it to end."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()  # synchronous: the task ends even if our caller is cancelled below
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller was cancelled while we waited: keep that cancellation

    def _rescan_interval(self, ttl_s: float | None) -> float:
        if ttl_s is None:
            return self._min_interval_s
        return max(float(ttl_s), self._min_interval_s)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            if not self._should_poll():
                continue
            try:
                await self.rescan()
            except Exception:  # a failing callback must not end polling for good
                _log.exception("SRV rescan of %r failed", self._name)

    async def rescan(self) -> None:
        """One rescan now (the task calls it every interval; tests may call it directly)."""
        self._rescans += 1
        try:
            answer = await self._resolver.resolve_srv(self._name)
        except ConfigurationError as exc:
            self._failed(f"{exc}")
            return
        for record in answer.records:
            if not is_valid_target(self._srv_host, record.target):
                _log.warning(
                    "SRV rescan: ignoring %r, not in the domain of %r",
                    record.target,
                    self._srv_host,
                )
        current = tuple(self._current_hosts())
        hosts = polled_hosts(
            current, answer.records, self._srv_host, self._srv_max_hosts, self._rng
        )
        if hosts is None:
            self._failed(f"no valid SRV records for {self._name!r}")
            return
        self._interval_s = self._rescan_interval(answer.ttl)
        self._hosts = hosts
        if set(hosts) != set(current):
            self._on_hosts_changed(hosts)

    def _failed(self, reason: str) -> None:
        # Polling spec: keep the topology, raise nothing, log, and retry at the heartbeat
        # frequency until a verified record comes back.
        _log.warning("SRV rescan failed, keeping %d hosts: %s", len(self._hosts), reason)
        self._interval_s = min(self._heartbeat_s, self._interval_s)
