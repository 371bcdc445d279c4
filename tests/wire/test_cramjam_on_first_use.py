"""cramjam is imported by the first message compressed or inflated, not by ``import
asyncmongo``: compression is off unless the URI asks for it, and cramjam's extension adds
about 1.6 MB of resident memory to every process that loads it."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_client_without_compressors_never_imports_cramjam() -> None:
    _run(
        "import asyncio, sys\n"
        "import asyncmongo\n"
        "from asyncmongo.testing import Standalone\n"
        "assert 'cramjam' not in sys.modules, 'import asyncmongo loaded cramjam'\n"
        "async def main():\n"
        "    async with Standalone() as server, asyncmongo.AsyncMongoClient(server.uri) as c:\n"
        "        await c.t.c.insert_one({'x': 1})\n"
        "        assert await c.t.c.find_one({}, {'_id': 0}) == {'x': 1}\n"
        "asyncio.run(main())\n"
        "assert 'cramjam' not in sys.modules, 'a client without compressors loaded cramjam'\n"
    )


def test_a_client_with_compressors_loads_cramjam_and_round_trips() -> None:
    _run(
        "import asyncio, sys\n"
        "import asyncmongo\n"
        "from asyncmongo.testing import Standalone\n"
        "async def main():\n"
        "    async with Standalone() as server, asyncmongo.AsyncMongoClient(\n"
        "        server.uri, compressors='zstd'\n"
        "    ) as c:\n"
        "        await c.t.c.insert_one({'x': 'y' * 1000})\n"
        "        assert await c.t.c.find_one({}, {'_id': 0}) == {'x': 'y' * 1000}\n"
        "asyncio.run(main())\n"
        "assert 'cramjam' in sys.modules, 'zstd messages went through without cramjam'\n"
    )
