"""AsyncClientEncryption: explicit encryption and the key vault, PyMongo's API on asyncio.

Client-side encryption spec, "ClientEncryption". Values are encrypted and decrypted by
libmongocrypt (through pymongocrypt, loaded on first use); the state machine runs on the
event loop (:mod:`~asyncmongo.encryption.state_machine`) and reads and writes data keys with
the key vault client's own operations (:mod:`~asyncmongo.encryption.key_vault`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from asyncmongo.bson import decode, encode
from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import CodecOptions, as_codec_options
from asyncmongo.bson.errors import BSONError
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.encryption._binding import Binding, load
from asyncmongo.encryption.key_vault import KeyVaultIO, key_vault_collection
from asyncmongo.encryption.state_machine import run_state_machine
from asyncmongo.errors import (
    ConfigurationError,
    EncryptionError,
    InvalidArgument,
    InvalidOperation,
)

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient
    from asyncmongo.cursor import AsyncCursor
    from asyncmongo.results import DeleteResult

__all__ = ["AsyncClientEncryption"]

#: Ciphertext is BSON binary subtype 6.
ENCRYPTED_SUBTYPE = 6


@contextmanager
def wrap_encryption_errors() -> Iterator[None]:
    """Failures of encryption surface as EncryptionError with the cause attached, as in
    PyMongo; BSON errors (the value, not the encryption) and configuration errors pass
    unchanged."""
    try:
        yield
    except (BSONError, ConfigurationError, EncryptionError):
        raise
    except Exception as exc:
        raise EncryptionError(exc) from exc


def as_key_id(key_id: Binary | uuid.UUID | None) -> bytes | None:
    """The bytes of a data key's UUID ``_id`` (given as a subtype-4 Binary or a UUID)."""
    if key_id is None:
        return None
    if isinstance(key_id, uuid.UUID):
        return key_id.bytes
    if isinstance(key_id, Binary) and key_id.subtype == UUID_SUBTYPE:
        return bytes(key_id)
    raise InvalidArgument(f"key_id must be a UUID or a Binary of subtype 4, not {key_id!r}")


def mongocrypt_options(binding: Binding, kms_providers: Mapping[str, Any],
                       key_expiration_ms: int | None) -> Any:
    """pymongocrypt's options for explicit encryption (no schema, no crypt_shared)."""
    extra = {} if key_expiration_ms is None else {"key_expiration_ms": key_expiration_ms}
    providers = {name: dict(value) for name, value in kms_providers.items()}
    try:
        return binding.MongoCryptOptions(
            providers, bypass_encryption=True, enable_multiple_collinfo=True, **extra
        )
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(str(exc)) from exc


class AsyncClientEncryption:
    """Explicit client-side field level encryption, and management of the data keys.

    - ``kms_providers``: the KMS providers' credentials, e.g. ``{"local": {"key": <96
      bytes>}}``. Only ``local`` works end to end: the others need KMS requests, which raise
      ConfigurationError naming the provider.
    - ``key_vault_namespace``: the key vault collection, ``"database.collection"``.
    - ``key_vault_client``: the AsyncMongoClient the key vault is read and written through.
    - ``codec_options``: how values are encoded for encryption and decrypted values decoded
      (those of the collection the values go to).
    - ``key_expiration_ms``: how long libmongocrypt caches a decrypted data key (None: its
      default, 60 s; 0: forever).

    ``async with AsyncClientEncryption(...) as client_encryption:`` closes it on exit.
    """

    __slots__ = ("_binding", "_codec_options", "_crypt", "_io", "_key_vault", "_namespace",
                 "_providers")

    def __init__(
        self,
        kms_providers: Mapping[str, Any],
        key_vault_namespace: str,
        key_vault_client: AsyncMongoClient[Any],
        codec_options: CodecOptions[Any],
        key_expiration_ms: int | None = None,
    ) -> None:
        from asyncmongo.client import AsyncMongoClient

        if not isinstance(key_vault_client, AsyncMongoClient):
            raise InvalidArgument(
                f"key_vault_client must be an AsyncMongoClient, not {type(key_vault_client)!r}"
            )
        self._binding = load()
        self._codec_options = as_codec_options(codec_options)
        self._namespace = key_vault_namespace
        self._providers = tuple(kms_providers)
        self._key_vault = key_vault_collection(key_vault_client, key_vault_namespace)
        self._io = KeyVaultIO(self._key_vault)
        self._binding.AsyncMongoCryptCallback.register(KeyVaultIO)
        options = mongocrypt_options(self._binding, kms_providers, key_expiration_ms)
        try:
            self._crypt: Any = self._binding.MongoCrypt(options, self._io)
        except self._binding.MongoCryptError as exc:  # libmongocrypt refuses kms_providers
            raise ConfigurationError(str(exc)) from exc

    def __repr__(self) -> str:
        state = "closed" if self._crypt is None else "open"
        return (f"AsyncClientEncryption(key vault {self._namespace!r}, "
                f"providers {list(self._providers)}, {state})")

    async def __aenter__(self) -> AsyncClientEncryption:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def _open_crypt(self) -> Any:
        if self._crypt is None:
            raise InvalidOperation("Cannot use closed AsyncClientEncryption")
        return self._crypt

    async def _run(self, ctx: Any) -> bytes | None:
        with ctx:
            return await run_state_machine(self._binding, ctx, self._io)

    # -- data keys ---------------------------------------------------------------------------

    async def create_data_key(
        self,
        kms_provider: str,
        master_key: Mapping[str, Any] | None = None,
        key_alt_names: Sequence[str] | None = None,
        key_material: bytes | None = None,
    ) -> Binary:
        """Create a data key with ``kms_provider``'s master key and insert it into the key
        vault; its ``_id`` (a UUID Binary).

        ``master_key`` is the provider's key document (not used by ``local``);
        ``key_alt_names`` are names :meth:`encrypt` may use instead of the ``_id``;
        ``key_material`` (96 bytes) replaces the random key material.
        """
        crypt = self._open_crypt()
        names = [encode({"keyAltName": name}) for name in key_alt_names or ()]
        material = None
        if key_material is not None:
            material = encode({"keyMaterial": Binary(key_material)})
        opts = self._binding.DataKeyOpts(master_key, names, material)
        with wrap_encryption_errors():
            key = await self._run(crypt.data_key_context(kms_provider, opts))
            assert key is not None  # a data key context always finishes READY
            return await self._io.insert_data_key(key)

    async def get_key(self, id: Binary) -> RawBSONDocument | None:
        """The key document with ``_id`` ``id``, or None."""
        self._open_crypt()
        return await self._key_vault.find_one({"_id": id})

    def get_keys(self) -> AsyncCursor[RawBSONDocument]:
        """A cursor over every key document of the key vault."""
        self._open_crypt()
        return self._key_vault.find({})

    async def get_key_by_alt_name(self, key_alt_name: str) -> RawBSONDocument | None:
        """The key document with the alternate name ``key_alt_name``, or None."""
        self._open_crypt()
        return await self._key_vault.find_one({"keyAltNames": key_alt_name})

    async def add_key_alt_name(self, id: Binary, key_alt_name: str) -> RawBSONDocument | None:
        """Add ``key_alt_name`` to the key's alternate names; the key document before (None
        if there is no key ``id``)."""
        self._open_crypt()
        update = {"$addToSet": {"keyAltNames": key_alt_name}}
        return await self._key_vault.find_one_and_update({"_id": id}, update)

    async def remove_key_alt_name(self, id: Binary, key_alt_name: str) -> RawBSONDocument | None:
        """Remove ``key_alt_name`` from the key's alternate names, and the field with the
        last one; the key document before (None if there is no key ``id``)."""
        self._open_crypt()
        # Spec, removeKeyAltName: one pipeline update, so no empty array is left behind.
        names_without = {
            "$cond": [
                {"$eq": ["$keyAltNames", [key_alt_name]]},
                "$$REMOVE",
                {"$filter": {"input": "$keyAltNames",
                             "cond": {"$ne": ["$$this", key_alt_name]}}},
            ]
        }
        pipeline = [{"$set": {"keyAltNames": names_without}}]
        return await self._key_vault.find_one_and_update({"_id": id}, pipeline)

    async def delete_key(self, id: Binary) -> DeleteResult:
        """Delete the key document with ``_id`` ``id``."""
        self._open_crypt()
        return await self._key_vault.delete_one({"_id": id})

    # -- values ------------------------------------------------------------------------------

    async def encrypt(
        self,
        value: Any,
        algorithm: str,
        key_id: Binary | uuid.UUID | None = None,
        key_alt_name: str | None = None,
        query_type: str | None = None,
        contention_factor: int | None = None,
    ) -> Binary:
        """Encrypt ``value`` with ``algorithm`` (see :class:`Algorithm`) and the data key
        named by exactly one of ``key_id`` and ``key_alt_name``; a Binary of subtype 6.

        ``query_type`` and ``contention_factor`` are for the ``Indexed`` algorithm.
        """
        crypt = self._open_crypt()
        doc = encode({"v": value}, codec_options=self._codec_options)
        alt_name = None if key_alt_name is None else encode({"keyAltName": key_alt_name})
        opts = self._binding.ExplicitEncryptOpts(
            algorithm, as_key_id(key_id), alt_name, query_type, contention_factor
        )
        with wrap_encryption_errors():
            encrypted = await self._run(crypt.explicit_encryption_context(doc, opts))
            assert encrypted is not None
            result: Binary = decode(encrypted)["v"]
            return result

    async def decrypt(self, value: Binary) -> Any:
        """The value ``value`` (a Binary of subtype 6) encrypts, decoded with this object's
        codec options."""
        crypt = self._open_crypt()
        if not (isinstance(value, Binary) and value.subtype == ENCRYPTED_SUBTYPE):
            raise InvalidArgument(f"decrypt() takes a Binary of subtype 6, not {value!r}")
        with wrap_encryption_errors():
            decrypted = await self._run(crypt.explicit_decryption_context(encode({"v": value})))
            assert decrypted is not None
            return decode(decrypted, self._codec_options)["v"]

    async def close(self) -> None:
        """Release libmongocrypt's resources (the key vault client stays open: it is the
        caller's). Using the object afterwards raises InvalidOperation."""
        crypt, self._crypt = self._crypt, None
        if crypt is not None:
            crypt.close()
