"""dnspython and cramjam are imported by their first use, not by ``import asyncmongo``: a
client of a plain ``mongodb://`` URI never asks DNS for anything (dnspython takes about
70 ms to import), and compression is off unless the URI asks for it (cramjam's extension
adds about 1.8 MB to the resident set). Each check runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_plain_client_loads_neither_dnspython_nor_cramjam() -> None:
    _run(
        "import asyncio, sys\n"
        "import asyncmongo\n"
        "from asyncmongo.testing import Standalone\n"
        "for module in ('dns', 'cramjam'):\n"
        "    assert module not in sys.modules, f'import asyncmongo loaded {module}'\n"
        "async def main():\n"
        "    async with Standalone() as server, asyncmongo.AsyncMongoClient(server.uri) as c:\n"
        "        await c.admin.command('ping')\n"
        "        await c.t.c.insert_one({'x': 1})\n"
        "        assert await c.t.c.find_one({}, {'_id': 0}) == {'x': 1}\n"
        "asyncio.run(main())\n"
        "for module in ('dns', 'cramjam'):\n"
        "    assert module not in sys.modules, f'a mongodb:// client loaded {module}'\n"
    )


def test_a_resolver_imports_dnspython() -> None:
    _run(
        "import sys\n"
        "from asyncmongo.runtime.srv import DnspythonResolver\n"
        "assert 'dns' not in sys.modules\n"
        "resolver = DnspythonResolver(['127.0.0.1'], 53)\n"
        "assert 'dns.asyncresolver' in sys.modules\n"
        "assert resolver._resolver.nameservers == ['127.0.0.1']\n"
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
