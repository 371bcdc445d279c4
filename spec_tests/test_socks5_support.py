"""The socks5-support prose tests, read from the vendored README's table.

The README asks for a replica set and two SOCKS5 proxies started by ``socks5srv.py``: one on
port 1080 requiring ``username:p4ssw0rd``, one on 1081 without authentication, both with
``--map "localhost:12345 to <a member>"``. Here the replica set is simulated
(``asyncmongo.testing.ReplicaSet``) and the proxies are ``asyncmongo.testing.Socks5Proxy``,
which behaves as ``socks5srv.py`` does (it picks "no authentication" when that is offered and
none is required; ``map=``), on free ports substituted for 1080/1081. Every connection string
runs with TLS off and on (``tls``/``tlsCAFile`` appended), as URI options and as MongoClient
keyword arguments; each client runs ``hello``, which must succeed or fail as the table says.
One succeeding case also checks that command events name the server, not the proxy.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.errors import ServerSelectionTimeoutError
from asyncmongo.monitoring.command import CommandEvent
from asyncmongo.testing import ReplicaSet, Socks5Proxy
from tests.support import certs

pytestmark = pytest.mark.timeout(30)

README = Path(__file__).parent / "data" / "socks5-support" / "README.md"
ROW = re.compile(r"^\|\s*`(mongodb://[^`]+)`\s*\|\s*\((fails|succeeds)\)\s*\|", re.MULTILINE)
CASES = ROW.findall(README.read_text())
MAPPED_HOST = "localhost:12345"


def test_the_readme_table_was_read() -> None:
    assert len(CASES) == 11


@dataclass
class Setup:
    rs: ReplicaSet
    auth_proxy: Socks5Proxy
    open_proxy: Socks5Proxy
    tls_options: dict[str, str]

    def resolve(self, template: str) -> tuple[str, dict[str, str]]:
        """The README's connection string with hosts and proxy ports filled in, and its
        query as a dict."""
        hosts = ",".join(member.host for member in self.rs.members)
        uri = template.replace("<mappedhost>", MAPPED_HOST).replace("<replicaset>", hosts)
        uri = uri.replace("proxyPort=1080", f"proxyPort={self.auth_proxy.port}")
        uri = uri.replace("proxyPort=1081", f"proxyPort={self.open_proxy.port}")
        base, _, query = uri.partition("?")
        options = dict(urllib.parse.parse_qsl(query)) | self.tls_options
        return base, options


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> certs.CertFiles:
    return certs.generate(tmp_path_factory.mktemp("certs"))


@pytest.fixture(params=[False, True], ids=["tls-off", "tls-on"])
async def setup(request: pytest.FixtureRequest, files: certs.CertFiles) -> AsyncIterator[Setup]:
    tls = request.param
    context = files.server_context() if tls else None
    async with ReplicaSet(members=3, arbiters=0, hidden=0, tls=context) as rs:
        mapping = {MAPPED_HOST: rs.members[0].host}
        auth = Socks5Proxy(username="username", password="p4ssw0rd", map=mapping)
        async with auth, Socks5Proxy(map=mapping) as open_proxy:
            options = {"tls": "true", "tlsCAFile": str(files.ca)} if tls else {}
            yield Setup(rs, auth, open_proxy, options)


@pytest.mark.parametrize("as_kwargs", [False, True], ids=["uri", "kwargs"])
@pytest.mark.parametrize(("template", "expected"), CASES, ids=[f"row{i}" for i in range(11)])
async def test_prose(setup: Setup, template: str, expected: str, as_kwargs: bool) -> None:
    base, options = setup.resolve(template)
    proxy = {k: v for k, v in options.items() if k.startswith("proxy")}
    if as_kwargs:
        rest = {k: v for k, v in options.items() if k not in proxy}
        uri = base + "?" + urllib.parse.urlencode(rest)
        kwargs: dict[str, Any] = {**proxy, "proxyPort": int(proxy["proxyPort"])}
    else:
        uri, kwargs = base + "?" + urllib.parse.urlencode(options), {}
    events: list[Any] = []
    # a failing row fails fast; a passing one (a TLS handshake through the proxy) gets room
    # for a loaded machine
    selection_ms = 500 if expected == "fails" else 10_000
    client = AsyncMongoClient(
        uri, serverSelectionTimeoutMS=selection_ms, event_listeners=[events.append], **kwargs
    )
    carried = setup.auth_proxy.connections + setup.open_proxy.connections
    try:
        if expected == "fails":
            with pytest.raises(ServerSelectionTimeoutError, match="SOCKS5 proxy"):
                await client.admin.command("hello")
            return
        assert (await client.admin.command("hello"))["ok"] == 1.0
    finally:
        await client.close()
    assert setup.auth_proxy.connections + setup.open_proxy.connections > carried
    proxy_ports = {setup.auth_proxy.port, setup.open_proxy.port}
    commands = [e for e in events if isinstance(e, CommandEvent)]
    assert commands and all(e.connection_id[1] not in proxy_ports for e in commands)
