"""asyncmongo without pymongocrypt: it imports and runs as before, and encryption says how to
install what it needs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import AsyncClientEncryption, _binding
from asyncmongo.errors import ConfigurationError


def test_importing_asyncmongo_does_not_load_pymongocrypt() -> None:
    code = (
        "import sys, asyncmongo, asyncmongo.encryption\n"
        "assert 'pymongocrypt' not in sys.modules, 'pymongocrypt loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def no_pymongocrypt(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pymongocrypt unimportable (None in sys.modules), the binding cache empty."""
    for name in [n for n in sys.modules if n.split(".")[0] == "pymongocrypt"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pymongocrypt", None)
    _binding.load.cache_clear()
    yield
    _binding.load.cache_clear()


@pytest.mark.usefixtures("no_pymongocrypt")
async def test_client_encryption_names_the_extra() -> None:
    async with AsyncMongoClient("mongodb://127.0.0.1:1", connect=False) as client:
        with pytest.raises(ConfigurationError, match=r"asyncmongo\[encryption\]"):
            AsyncClientEncryption({"local": {"key": bytes(96)}}, "keyvault.datakeys", client,
                                  CodecOptions())
