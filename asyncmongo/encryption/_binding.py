"""pymongocrypt, loaded on first use: asyncmongo imports and runs without it.

pymongocrypt wraps libmongocrypt (bundled in its wheels) and works on BSON bytes; it does not
import PyMongo. asyncmongo uses its context objects (``MongoCrypt``, ``*Context``) and drives
their state machine itself (:mod:`asyncmongo.encryption.state_machine`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from asyncmongo.errors import ConfigurationError

__all__ = ["Binding", "load"]

INSTALL_HINT = "python -m pip install 'asyncmongo[encryption]'"


@dataclass(frozen=True, slots=True)
class Binding:
    """The pymongocrypt names asyncmongo uses (all untyped: pymongocrypt has no stubs)."""

    lib: Any
    MongoCrypt: Any
    MongoCryptOptions: Any
    DataKeyOpts: Any
    ExplicitEncryptOpts: Any
    MongoCryptError: type[Exception]
    AsyncMongoCryptCallback: Any
    version: str
    libmongocrypt_version: str


@cache
def load() -> Binding:
    """Import pymongocrypt, or raise ConfigurationError saying how to install it."""
    try:
        import pymongocrypt
        from pymongocrypt.asynchronous.state_machine import AsyncMongoCryptCallback
        from pymongocrypt.binding import lib
        from pymongocrypt.errors import MongoCryptError
        from pymongocrypt.mongocrypt import MongoCrypt
        from pymongocrypt.options import DataKeyOpts, ExplicitEncryptOpts, MongoCryptOptions
    except ImportError as exc:
        raise ConfigurationError(
            f"client-side field level encryption needs pymongocrypt ({exc}): "
            f"install it with: {INSTALL_HINT}"
        ) from exc
    return Binding(
        lib=lib,
        MongoCrypt=MongoCrypt,
        MongoCryptOptions=MongoCryptOptions,
        DataKeyOpts=DataKeyOpts,
        ExplicitEncryptOpts=ExplicitEncryptOpts,
        MongoCryptError=MongoCryptError,
        AsyncMongoCryptCallback=AsyncMongoCryptCallback,
        version=pymongocrypt.__version__,
        libmongocrypt_version=pymongocrypt.libmongocrypt_version(),
    )
