"""dnspython is imported by the first DNS lookup, not by ``import asyncmongo``: it takes about
70 ms to import, and a client of a plain ``mongodb://`` URI never asks DNS for anything."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_plain_client_never_imports_dnspython() -> None:
    _run(
        "import asyncio, sys\n"
        "import asyncmongo\n"
        "from asyncmongo.testing import Standalone\n"
        "assert 'dns' not in sys.modules, 'import asyncmongo loaded dnspython'\n"
        "async def main():\n"
        "    async with Standalone() as server, asyncmongo.AsyncMongoClient(server.uri) as c:\n"
        "        await c.admin.command('ping')\n"
        "asyncio.run(main())\n"
        "assert 'dns' not in sys.modules, 'a mongodb:// client loaded dnspython'\n"
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
