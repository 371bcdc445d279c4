"""A throwaway Kerberos realm on 127.0.0.1, for testing GSSAPI authentication.

:class:`KerberosRealm` creates a realm database in a temporary directory with MIT Kerberos's
own tools (``kdb5_util``, ``kadmin.local``), starts ``krb5kdc`` on a free port in the
foreground, and writes the configuration files a client and the simulated server need. It
needs the MIT Kerberos server packages (Debian: ``krb5-kdc krb5-admin-server``);
:func:`kdc_unavailable_reason` says why a realm cannot be made here, so tests can skip with it.

Typical use, with the simulator verifying GSSAPI::

    async with KerberosRealm() as realm:
        await realm.add_principal("alice", password="secret")
        keytab = await realm.add_service("mongodb", "127.0.0.1")
        os.environ.update(realm.environment)        # KRB5_CONFIG, KRB5CCNAME
        async with Standalone(gssapi_keytab=keytab) as mongod:
            mongod.users.add_gssapi_user(f"alice@{realm.name}")
            ...

The realm's ``environment`` points libkrb5 at the realm (``KRB5_CONFIG``) and at a credential
cache of its own (``KRB5CCNAME``), so nothing of the machine's Kerberos setup is used or changed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
from pathlib import Path
from types import TracebackType

from asyncmongo.errors import ConfigurationError

__all__ = ["KerberosRealm", "kdc_unavailable_reason"]

_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")
_SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])


def _tool(name: str) -> str | None:
    return shutil.which(name, path=_SEARCH_PATH)


def kdc_unavailable_reason() -> str | None:
    """Why a :class:`KerberosRealm` cannot run on this machine, or None when it can."""
    missing = [name for name in _TOOLS if _tool(name) is None]
    if missing:
        return (
            f"MIT Kerberos server tools not installed ({', '.join(missing)} missing; Debian: "
            "apt-get install krb5-kdc krb5-admin-server)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class KerberosRealm:
    """A Kerberos realm with a KDC on 127.0.0.1, torn down (process and files) on exit."""

    def __init__(self, name: str = "ASYNCMONGO.TEST") -> None:
        self.name = name
        self.port = 0
        self._dir: Path | None = None
        self._kdc: asyncio.subprocess.Process | None = None

    @property
    def directory(self) -> Path:
        """Where the realm's database, configuration and credential cache live."""
        if self._dir is None:
            raise ConfigurationError("the Kerberos realm is not started")
        return self._dir

    @property
    def environment(self) -> dict[str, str]:
        """The variables pointing libkrb5 (client and acceptor) at this realm."""
        return {
            "KRB5_CONFIG": str(self.directory / "krb5.conf"),
            "KRB5CCNAME": f"FILE:{self.directory / 'ccache'}",
        }

    async def start(self) -> None:
        """Create the realm database and start the KDC."""
        reason = kdc_unavailable_reason()
        if reason is not None:
            raise ConfigurationError(reason)
        self._dir = Path(tempfile.mkdtemp(prefix="asyncmongo-kdc-"))
        self.port = _free_port()
        self._write_configuration()
        await self._run("kdb5_util", "create", "-s", "-r", self.name, "-P", "kdc-master-key")
        kdc = _tool("krb5kdc")
        assert kdc is not None
        self._kdc = await asyncio.create_subprocess_exec(
            kdc, "-n", "-r", self.name, env=self._tool_environment(),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        await self._wait_listening()

    async def stop(self) -> None:
        """Stop the KDC and delete the realm's files."""
        kdc, self._kdc = self._kdc, None
        if kdc is not None and kdc.returncode is None:
            kdc.terminate()
            await kdc.communicate()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def add_principal(self, principal: str, *, password: str) -> str:
        """Create a user principal with a password; returns its full name."""
        full = self._full(principal)
        await self._kadmin(f"addprinc -pw {password} {full}")
        return full

    async def add_service(self, service: str, host: str) -> Path:
        """Create the service principal ``service/host`` with a random key and export it to a
        keytab (the acceptor's secret); returns the keytab's path. Several services may share
        one keytab."""
        full = self._full(f"{service}/{host}")
        keytab = self.directory / "service.keytab"
        await self._kadmin(f"addprinc -randkey {full}")
        await self._kadmin(f"ktadd -k {keytab} {full}")
        return keytab

    async def kinit(self, principal: str, password: str) -> None:
        """Get a ticket-granting ticket for ``principal`` into the realm's credential cache
        (what a user's ``kinit`` does before connecting without a password)."""
        kinit = shutil.which("kinit", path=_SEARCH_PATH)
        if kinit is None:
            raise ConfigurationError("kinit not installed (Debian: apt-get install krb5-user)")
        process = await asyncio.create_subprocess_exec(
            kinit, self._full(principal), env={**self._tool_environment(), **self.environment},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        _, err = await process.communicate(password.encode() + b"\n")
        if process.returncode != 0:
            raise ConfigurationError(f"kinit {principal} failed: {err.decode().strip()}")

    def _full(self, principal: str) -> str:
        return principal if "@" in principal else f"{principal}@{self.name}"

    def _write_configuration(self) -> None:
        d = self.directory
        (d / "krb5.conf").write_text(
            "[libdefaults]\n"
            f"  default_realm = {self.name}\n"
            "  dns_lookup_realm = false\n  dns_lookup_kdc = false\n"
            "  rdns = false\n  dns_canonicalize_hostname = false\n"
            "  udp_preference_limit = 1\n"
            "[realms]\n"
            f"  {self.name} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n")
        (d / "kdc.conf").write_text(
            "[kdcdefaults]\n"
            f"  kdc_ports = {self.port}\n  kdc_tcp_ports = {self.port}\n"
            "[realms]\n"
            f"  {self.name} = {{\n"
            f"    database_name = {d / 'principal'}\n"
            f"    key_stash_file = {d / 'stash'}\n"
            f"    acl_file = {d / 'kadm5.acl'}\n"
            "    max_life = 1h\n  }\n"
            f"[logging]\n  kdc = FILE:{d / 'kdc.log'}\n")
        (d / "kadm5.acl").write_text("")

    def _tool_environment(self) -> dict[str, str]:
        return {
            "PATH": _SEARCH_PATH,
            "KRB5_CONFIG": str(self.directory / "krb5.conf"),
            "KRB5_KDC_PROFILE": str(self.directory / "kdc.conf"),
        }

    async def _kadmin(self, query: str) -> None:
        await self._run("kadmin.local", "-r", self.name, "-q", query)

    async def _run(self, tool: str, *args: str) -> None:
        path = _tool(tool)
        assert path is not None
        process = await asyncio.create_subprocess_exec(
            path, *args, env=self._tool_environment(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate()
        if process.returncode != 0:
            raise ConfigurationError(
                f"{tool} {' '.join(args[:2])} failed: {(err or out).decode().strip()[-400:]}")

    async def _wait_listening(self) -> None:
        for _ in range(200):
            if self._kdc is not None and self._kdc.returncode is not None:
                _, err = await self._kdc.communicate()
                raise ConfigurationError(f"krb5kdc exited: {err.decode().strip()[-400:]}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return
        raise ConfigurationError(f"krb5kdc did not listen on 127.0.0.1:{self.port}")

    async def __aenter__(self) -> KerberosRealm:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def __repr__(self) -> str:
        state = f"127.0.0.1:{self.port}" if self._kdc is not None else "stopped"
        return f"<KerberosRealm {self.name} {state}>"
