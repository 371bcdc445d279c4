"""On-demand KMS credentials for azure and gcp (client-side encryption spec, "Automatic
Credentials"), against a stand-in metadata service on 127.0.0.1 that plays the spec's
``fake_azure`` cases (prose test 18, "Azure IMDS Credentials": success, empty JSON, bad JSON,
HTTP 404, HTTP 500, slow) and the GCP metadata server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from asyncmongo.encryption import on_demand
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.tcp_service import TcpService

pytestmark = pytest.mark.timeout(60)


class FakeMetadata(TcpService):
    """Answers every GET with ``case``'s response; records the requests' heads."""

    def __init__(self) -> None:
        super().__init__()
        self.case = "success"
        self.requests: list[str] = []

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        try:
            await self._answer(reader, writer)
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        self.requests.append(head)
        status, body = {
            "success": (200, json.dumps({"access_token": "magic-cookie", "expires_in": "70",
                                         "resource": "https://vault.azure.net"})),
            "empty-json": (200, "{}"),
            "bad-json": (200, '{"access-token": }'),
            "404": (404, "not found"),
            "500": (500, "internal error: try again"),
        }.get(self.case, (200, "{}"))
        if self.case == "slow":
            await asyncio.sleep(3)
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n{body}".encode())
        await writer.drain()


@pytest.fixture
async def metadata(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeMetadata]:
    fake = FakeMetadata()
    await fake.start()
    port = fake.port
    monkeypatch.setattr(on_demand, "AZURE_IMDS_URL", f"http://127.0.0.1:{port}/metadata/token")
    monkeypatch.setattr(on_demand, "GCP_TOKEN_URL", f"http://127.0.0.1:{port}/gcp/token")
    monkeypatch.setattr(on_demand, "_azure_cache", None)
    try:
        yield fake
    finally:
        await fake.close()


async def test_azure_success_and_the_cache(metadata: FakeMetadata) -> None:
    filled = await on_demand.on_demand_credentials({"azure": {}, "local": {"key": b"k"}})
    assert filled["azure"] == {"accessToken": "magic-cookie"}
    assert filled["local"] == {"key": b"k"}
    (head,) = metadata.requests
    assert head.startswith("GET /metadata/token?api-version=2018-02-01&resource=https%3A%2F%2F"
                           "vault.azure.net HTTP/1.1")
    assert "Metadata: true" in head and "Accept: application/json" in head
    # 70 s to expiry, more than the minute of margin: the next call uses the cache.
    assert await on_demand.azure_access_token() == "magic-cookie"
    assert len(metadata.requests) == 1


async def test_an_azure_token_near_expiry_is_fetched_again(
        metadata: FakeMetadata, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    monkeypatch.setattr(on_demand, "_azure_cache", ("old", loop.time() + 30))
    assert await on_demand.azure_access_token() == "magic-cookie"
    assert len(metadata.requests) == 1


@pytest.mark.parametrize(("case", "message"), [
    ("empty-json", "no access_token"),
    ("bad-json", "not JSON"),
    ("404", "HTTP 404: not found"),
    ("500", "HTTP 500: internal error: try again"),
])
async def test_azure_failures_say_what_came_back(metadata: FakeMetadata, case: str,
                                                 message: str) -> None:
    metadata.case = case
    with pytest.raises(ConfigurationError, match=f"on-demand 'azure' KMS credentials.*{message}"):
        await on_demand.on_demand_credentials({"azure": {}})


async def test_a_slow_imds_times_out(metadata: FakeMetadata,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(on_demand, "_REQUEST_SECONDS", 0.5)  # the spec's 10 s, scaled
    metadata.case = "slow"
    with pytest.raises(ConfigurationError, match="no answer"):
        await on_demand.on_demand_credentials({"azure": {}})


async def test_gcp(metadata: FakeMetadata) -> None:
    filled = await on_demand.on_demand_credentials({"gcp": {}})
    assert filled == {"gcp": {"accessToken": "magic-cookie"}}
    (head,) = metadata.requests
    assert head.startswith("GET /gcp/token HTTP/1.1") and "Metadata-Flavor: Google" in head
    metadata.case = "500"
    with pytest.raises(ConfigurationError, match=r"'gcp'.*HTTP 500"):
        await on_demand.on_demand_credentials({"gcp": {}})
