"""A client the application never closes leaves no unclosed socket behind it.

The loop's shutdown (``asyncio.run``, uvloop's runner) closes the client's sockets; each
scenario runs in a fresh interpreter, so the garbage collector's warnings are seen.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from asyncmongo.testing import Standalone

pytestmark = pytest.mark.timeout(60)

_SCRIPT = textwrap.dedent(
    """
    import asyncio, gc, sys, warnings
    warnings.simplefilter("always")
    from asyncmongo import AsyncMongoClient

    async def main(uri):
        client = AsyncMongoClient(uri)
        await client.db.c.insert_one({"a": 1})
        assert await client.db.c.find_one({}, {"_id": 0}) == {"a": 1}

    if sys.argv[2] == "uvloop":
        import uvloop
        uvloop.run(main(sys.argv[1]))
    else:
        asyncio.run(main(sys.argv[1]))
    gc.collect()
    print("done")
    """
)


@pytest.mark.parametrize("runner", ["asyncio", "uvloop"])
async def test_loop_shutdown_closes_a_never_closed_client(runner: str) -> None:
    if runner == "uvloop":
        pytest.importorskip("uvloop")
    async with Standalone() as server:
        process = await _run(server.uri, runner)
    assert process.stdout.strip() == "done", process.stderr
    assert "ResourceWarning" not in process.stderr, process.stderr
    assert "unclosed" not in process.stderr.lower(), process.stderr


async def _run(uri: str, runner: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-X", "dev", "-c", _SCRIPT, uri, runner]
    process = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 50)
    assert process.returncode is not None
    returncode = process.returncode
    return subprocess.CompletedProcess(command, returncode, stdout.decode(), stderr.decode())
