"""Interop: connect, handshake and run ``ping`` and ``hello`` against jongodb, a
MongoDB-compatible server nobody here wrote."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.runtime.connection import ConnectionSettings, connect
from tests.support.jongodb import jongodb_uri

__all__ = ["jongodb_uri"]

pytestmark = [pytest.mark.jongodb, pytest.mark.timeout(60)]


def address(uri: str) -> tuple[str, int]:
    parts = urlsplit(uri)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


async def test_handshake_ping_and_hello(jongodb_uri: str) -> None:
    settings = ConnectionSettings(host=HostInfo.detect({}, False), app_name="interop")
    conn = await connect(address(jongodb_uri), settings, id=1)
    try:
        assert conn.max_wire_version > 0
        assert conn.max_bson_object_size > 0 and conn.max_message_size_bytes > 0
        assert (await conn.command("admin", {"ping": 1}, check=True))["ok"] == 1
        hello = await conn.command("admin", {"hello": 1}, check=True)
        assert hello["ok"] == 1 and "maxWireVersion" in hello
        assert hello.get("isWritablePrimary") is True or hello.get("ismaster") is True
    finally:
        await conn.aclose()


async def test_repeated_commands_on_one_connection(jongodb_uri: str) -> None:
    conn = await connect(address(jongodb_uri), ConnectionSettings(host=HostInfo()), id=1)
    try:
        for _ in range(50):
            assert (await conn.command("admin", {"ping": 1}))["ok"] == 1
    finally:
        conn.close()
