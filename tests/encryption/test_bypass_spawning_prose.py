"""Client-side encryption prose test 8, "Bypass Spawning mongocryptd", against
asyncmongo.testing's Standalone.

mongocryptd is a MongoDB Enterprise binary, so ``mongocryptd_spawn_path`` names a
stand-in: a script that records that it was started (its pid in a marker file) and then
serves asyncmongo.testing's query analyzer on the ``--port`` it is given, as mongocryptd
would. So if the driver spawned it where it must not, both the marker file and the
handshake of step 3 (which would then succeed) catch it. A free port replaces 27021, as
the test allows.

"Via loading shared library" needs the crypt_shared library (an Enterprise download); it
runs when ``CRYPT_SHARED_LIB_PATH`` names one, the variable the drivers' test
infrastructure uses, and is skipped otherwise with that reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import EncryptionError, ServerSelectionTimeoutError
from asyncmongo.testing import Standalone
from spec_tests.support.spec_json import load_spec_json
from spec_tests.unified.encryption import LOCAL_MASTER_KEY

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

EXTERNAL = (Path(__file__).resolve().parents[2] / "spec_tests" / "data"
            / "client-side-encryption" / "external")
KEY_VAULT = "keyvault.datakeys"
PROVIDERS = {"local": {"key": LOCAL_MASTER_KEY}}
CRYPT_SHARED_LIB_PATH = os.environ.get("CRYPT_SHARED_LIB_PATH")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Env:
    """The deployment, a free port for mongocryptd, and the stand-in mongocryptd."""

    uri: str
    port: int
    spawn_path: Path
    marker: Path

    def spawn_args(self) -> list[str]:
        return ["--pidfilepath=bypass-spawning-mongocryptd.pid", f"--port={self.port}"]

    def opts(self, **extra: Any) -> Any:
        from asyncmongo.encryption import AutoEncryptionOpts

        return AutoEncryptionOpts(PROVIDERS, KEY_VAULT, mongocryptd_spawn_path=str(
            self.spawn_path), mongocryptd_spawn_args=self.spawn_args(), **extra)

    async def assert_mongocryptd_not_spawned(self) -> None:
        """Step 3: a handshake with the mongocryptd port times out; and the stand-in never
        started."""
        uri = f"mongodb://localhost:{self.port}/?serverSelectionTimeoutMS=1000"
        async with AsyncMongoClient(uri) as client:
            with pytest.raises(ServerSelectionTimeoutError):
                await client.admin.command("hello")
        assert not self.marker.exists(), "mongocryptd was spawned"


@pytest.fixture
async def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Env]:
    marker = tmp_path / "spawned.pid"
    script = tmp_path / "mongocryptd"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "from asyncmongo.testing.query_analyzer import main\n"
        "main(sys.argv[1:])\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path.cwd()), *sys.path]))
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            await client.keyvault.datakeys.insert_one(
                load_spec_json(EXTERNAL / "external-key.json"))
        try:
            yield Env(server.uri, _free_port(), script, marker)
        finally:
            if marker.exists():  # a wrongly spawned stand-in: stop it
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(marker.read_text()), signal.SIGTERM)


@pytest.mark.skipif(CRYPT_SHARED_LIB_PATH is None,
                    reason="needs the crypt_shared library (MongoDB Enterprise): set "
                           "CRYPT_SHARED_LIB_PATH to its path to run this case")
async def test_via_loading_shared_library(env: Env) -> None:
    opts = env.opts(schema_map={"db.coll": load_spec_json(EXTERNAL / "external-schema.json")},
                    mongocryptd_uri=f"mongodb://localhost:{env.port}/?serverSelectionTimeoutMS=1000",
                    crypt_shared_lib_path=CRYPT_SHARED_LIB_PATH, crypt_shared_lib_required=True)
    async with AsyncMongoClient(env.uri, auto_encryption_opts=opts) as client_encrypted:
        await client_encrypted.db.coll.insert_one({"unencrypted": "test"})
    await env.assert_mongocryptd_not_spawned()


async def test_via_mongocryptd_bypass_spawn(env: Env) -> None:
    """Nothing listens on the mongocryptd port and spawning is bypassed: the insert fails
    with the server selection error of the client to mongocryptd."""
    opts = env.opts(schema_map={"db.coll": load_spec_json(EXTERNAL / "external-schema.json")},
                    mongocryptd_bypass_spawn=True,
                    mongocryptd_uri=f"mongodb://localhost:{env.port}/?serverSelectionTimeoutMS=1000")
    async with AsyncMongoClient(env.uri, auto_encryption_opts=opts) as client_encrypted:
        with pytest.raises((EncryptionError, ServerSelectionTimeoutError)) as info:
            await client_encrypted.db.coll.insert_one({"encrypted": "test"})
    error = info.value
    selection = error if isinstance(error, ServerSelectionTimeoutError) else error.__cause__
    assert isinstance(selection, ServerSelectionTimeoutError), repr(error)
    assert f"{env.port}" in str(selection)
    assert not env.marker.exists(), "mongocryptd was spawned"


@pytest.mark.parametrize("bypass", ["bypass_auto_encryption", "bypass_query_analysis"])
async def test_via_bypass_option(env: Env, bypass: str) -> None:
    """"Via bypassAutoEncryption" and "Via bypassQueryAnalysis": the insert succeeds and no
    mongocryptd was started."""
    async with AsyncMongoClient(env.uri, auto_encryption_opts=env.opts(**{bypass: True})
                                ) as client_encrypted:
        await client_encrypted.db.coll.insert_one({"unencrypted": "test"})
    await env.assert_mongocryptd_not_spawned()
