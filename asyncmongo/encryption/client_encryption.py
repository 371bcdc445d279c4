"""AsyncClientEncryption: explicit encryption and the key vault, PyMongo's API on asyncio.

Client-side encryption spec, "ClientEncryption". Values are encrypted and decrypted by
libmongocrypt (through pymongocrypt, loaded on first use); the state machine runs on the
event loop (:mod:`~asyncmongo.encryption.state_machine`) and reads and writes data keys with
the key vault client's own operations (:mod:`~asyncmongo.encryption.key_vault`) and sends KMS
requests over asyncio TLS connections (:mod:`~asyncmongo.encryption.kms`).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from asyncmongo.bson import decode, encode
from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import CodecOptions, as_codec_options
from asyncmongo.bson.errors import BSONError
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.encryption._binding import Binding, load
from asyncmongo.encryption.credential_providers import (
    CredentialProviders,
    validate_credential_providers,
)
from asyncmongo.encryption.encrypted_collection import create_with_encrypted_fields
from asyncmongo.encryption.key_vault import KeyVaultIO, key_vault_collection
from asyncmongo.encryption.kms import KmsSession, kms_ssl_contexts
from asyncmongo.encryption.kms_connect import KmsConnectCallback
from asyncmongo.encryption.range_opts import RangeOpts
from asyncmongo.encryption.state_machine import run_state_machine
from asyncmongo.errors import (
    ConfigurationError,
    EncryptedCollectionError,
    EncryptionError,
    InvalidArgument,
    InvalidOperation,
)
from asyncmongo.runtime.timeout import timeout

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.cursor import AsyncCursor
    from asyncmongo.database import AsyncDatabase
    from asyncmongo.results import BulkWriteResult, DeleteResult

__all__ = ["AsyncClientEncryption", "RewrapManyDataKeyResult"]

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


@dataclass(frozen=True, slots=True)
class RewrapManyDataKeyResult:
    """What :meth:`AsyncClientEncryption.rewrap_many_data_key` did: the bulk write that
    stored the rewrapped keys, or None when no key matched the filter."""

    bulk_write_result: BulkWriteResult | None = None


def key_vault_io(binding: Binding, key_vault: AsyncCollection[RawBSONDocument],
                 kms_tls_options: Mapping[str, Mapping[str, Any]] | None,
                 kms_connect_callback: KmsConnectCallback | None = None,
                 credential_providers: CredentialProviders | None = None) -> KeyVaultIO:
    """The I/O of a libmongocrypt handle: ``key_vault`` and KMS requests with
    ``kms_tls_options`` (over ``kms_connect_callback``'s connections if given), on-demand
    credentials from ``credential_providers`` where given."""
    binding.AsyncMongoCryptCallback.register(KeyVaultIO)
    kms = KmsSession(kms_ssl_contexts(kms_tls_options), connect_callback=kms_connect_callback)
    return KeyVaultIO(key_vault, kms, binding.MongoCryptError, credential_providers)


class AsyncClientEncryption:
    """Explicit client-side field level encryption, and management of the data keys.

    - ``kms_providers``: the KMS providers' credentials, e.g. ``{"local": {"key": <96
      bytes>}}``, ``{"aws": {"accessKeyId": ..., "secretAccessKey": ...}}``, ``{"azure":
      {"tenantId", "clientId", "clientSecret"[, "identityPlatformEndpoint"]}}``, ``{"gcp":
      {"email", "privateKey"[, "endpoint"]}}``, ``{"kmip": {"endpoint": ...}}``; named
      providers (``"aws:name"``) too. An empty ``aws`` entry is filled from the environment
      when a request needs it (or by ``credential_providers``).
    - ``key_vault_namespace``: the key vault collection, ``"database.collection"``.
    - ``key_vault_client``: the AsyncMongoClient the key vault is read and written through.
    - ``codec_options``: how values are encoded for encryption and decrypted values decoded
      (those of the collection the values go to).
    - ``key_expiration_ms``: how long libmongocrypt caches a decrypted data key (None: its
      default, 60 s; 0: forever).
    - ``kms_tls_options``: TLS options per KMS provider (``tlsCAFile``,
      ``tlsCertificateKeyFile``, ``tlsCertificateKeyFilePassword``); insecure options are
      refused.
    - ``timeout_ms``: the limit on each operation of this object (key vault reads and writes
      and KMS requests together), as an ``asyncmongo.timeout`` block; None: the key vault
      client's own timeoutMS for its operations, 10 s per KMS request attempt.
    - ``kms_connect_callback``: opens each connection to a KMS host instead of the driver
      (client-side encryption spec, "kmsConnectCallback"), e.g. an HTTP CONNECT through a
      proxy. Called as ``callback(host, port, timeout_s)``, plain or ``async`` (preferred: a
      plain one blocks the event loop while it runs), it returns a connected
      ``socket.socket`` or an ``(asyncio.StreamReader, asyncio.StreamWriter)`` pair (the
      shape for a TLS tunnel such as an HTTPS proxy), without TLS to the KMS: the driver
      negotiates TLS with the KMS host over it (SNI and certificate verification name the
      KMS host; ``kms_tls_options`` apply). ``timeout_s`` is what the round trip may take:
      the rest of timeoutMS if less than 10 s, else 10 s. An ``OSError`` from the callback is
      a network error and retried like one (the callback is called again); any other error
      fails the operation. See :mod:`asyncmongo.encryption.kms_connect`.
    - ``credential_providers``: ``{"aws": provider}``, a callable (plain or async) returning
      AWS credentials, used instead of the default AWS chain to fill an empty
      ``kms_providers["aws"]`` (which it requires: ConfigurationError otherwise). It is
      called whenever libmongocrypt needs credentials; it may return what MONGODB-AWS's
      ``AWS_CREDENTIAL_PROVIDER`` may (see :mod:`asyncmongo.encryption.credential_providers`).

    ``async with AsyncClientEncryption(...) as client_encryption:`` closes it on exit.
    """

    __slots__ = ("_binding", "_codec_options", "_crypt", "_io", "_key_vault", "_namespace",
                 "_providers", "_timeout_s")

    def __init__(
        self,
        kms_providers: Mapping[str, Any],
        key_vault_namespace: str,
        key_vault_client: AsyncMongoClient[Any],
        codec_options: CodecOptions[Any],
        key_expiration_ms: int | None = None,
        kms_tls_options: Mapping[str, Mapping[str, Any]] | None = None,
        timeout_ms: int | None = None,
        kms_connect_callback: KmsConnectCallback | None = None,
        credential_providers: CredentialProviders | None = None,
    ) -> None:
        from asyncmongo.client import AsyncMongoClient

        if not isinstance(key_vault_client, AsyncMongoClient):
            raise InvalidArgument(
                f"key_vault_client must be an AsyncMongoClient, not {type(key_vault_client)!r}"
            )
        if timeout_ms is not None and (isinstance(timeout_ms, bool)
                                       or not isinstance(timeout_ms, int) or timeout_ms < 0):
            raise InvalidArgument(f"timeout_ms must be a non-negative int, not {timeout_ms!r}")
        if kms_connect_callback is not None and not callable(kms_connect_callback):
            raise InvalidArgument("kms_connect_callback must be callable")
        credentials = validate_credential_providers(credential_providers, kms_providers)
        self._timeout_s = None if not timeout_ms else timeout_ms / 1000
        self._binding = load()
        self._codec_options = as_codec_options(codec_options)
        self._namespace = key_vault_namespace
        self._providers = tuple(kms_providers)
        self._key_vault = key_vault_collection(key_vault_client, key_vault_namespace)
        self._io = key_vault_io(self._binding, self._key_vault, kms_tls_options,
                                kms_connect_callback, credentials)
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

    def _scope(self) -> AbstractContextManager[Any]:
        """The ``timeout_ms`` block of one operation (none without ``timeout_ms``: then the
        key vault client's own timeoutMS applies)."""
        return nullcontext() if self._timeout_s is None else timeout(self._timeout_s)

    async def _run(self, ctx: Any) -> bytes | None:
        with ctx, self._scope():
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

        ``master_key`` is the provider's key document (not used by ``local``): ``{"region",
        "key"[, "endpoint"]}`` for aws, ``{"keyVaultEndpoint", "keyName"[, "keyVersion"]}``
        for azure, ``{"projectId", "location", "keyRing", "keyName"[, "keyVersion",
        "endpoint"]}`` for gcp, ``{["keyId", "endpoint", "delegated"]}`` for kmip;
        ``key_alt_names`` are names :meth:`encrypt` may use instead of the ``_id``;
        ``key_material`` (96 bytes) replaces the random key material.
        """
        crypt = self._open_crypt()
        names = [encode({"keyAltName": name}) for name in key_alt_names or ()]
        material = None
        if key_material is not None:
            material = encode({"keyMaterial": Binary(key_material)})
        opts = self._binding.DataKeyOpts(master_key, names, material)
        with wrap_encryption_errors(), self._scope():
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
        range_opts: RangeOpts | None = None,
    ) -> Binary:
        """Encrypt ``value`` with ``algorithm`` (see :class:`Algorithm`) and the data key
        named by exactly one of ``key_id`` and ``key_alt_name``; a Binary of subtype 6.

        ``query_type`` and ``contention_factor`` are for the ``Indexed`` and ``Range``
        algorithms, ``range_opts`` for ``Range``.
        """
        result: Binary = await self._encrypt(
            value, algorithm, key_id, key_alt_name, query_type, contention_factor, range_opts,
            is_expression=False,
        )
        return result

    async def encrypt_expression(
        self,
        expression: Mapping[str, Any],
        algorithm: str,
        key_id: Binary | uuid.UUID | None = None,
        key_alt_name: str | None = None,
        query_type: str | None = None,
        contention_factor: int | None = None,
        range_opts: RangeOpts | None = None,
    ) -> dict[str, Any]:
        """Encrypt the bounds of a ``$and`` of ``$gt``/``$gte``/``$lt``/``$lte`` comparisons
        of one field (a find filter, or an aggregate ``$expr``) for a ``Range`` query; the
        expression with the bounds replaced by one encrypted payload, decoded with this
        object's codec options."""
        result: dict[str, Any] = await self._encrypt(
            expression, algorithm, key_id, key_alt_name, query_type, contention_factor,
            range_opts, is_expression=True,
        )
        return result

    async def _encrypt(self, value: Any, algorithm: str, key_id: Binary | uuid.UUID | None,
                       key_alt_name: str | None, query_type: str | None,
                       contention_factor: int | None, range_opts: RangeOpts | None,
                       is_expression: bool) -> Any:
        crypt = self._open_crypt()
        doc = encode({"v": value}, codec_options=self._codec_options)
        alt_name = None if key_alt_name is None else encode({"keyAltName": key_alt_name})
        range_bytes = None
        if range_opts is not None:
            range_bytes = encode(range_opts.document, codec_options=self._codec_options)
        opts = self._binding.ExplicitEncryptOpts(
            algorithm, as_key_id(key_id), alt_name, query_type, contention_factor,
            range_bytes, is_expression,
        )
        with wrap_encryption_errors():
            encrypted = await self._run(crypt.explicit_encryption_context(doc, opts))
            assert encrypted is not None
            return decode(encrypted, self._codec_options)["v"]

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

    # -- rewrapping and encrypted collections ------------------------------------------------

    async def rewrap_many_data_key(
        self,
        filter: Mapping[str, Any],
        provider: str | None = None,
        master_key: Mapping[str, Any] | None = None,
    ) -> RewrapManyDataKeyResult:
        """Decrypt the data keys matching ``filter`` and encrypt them again: with
        ``provider``'s ``master_key`` when given, else with the master key each already has;
        then store them (one bulk write of updateOne per key)."""
        crypt = self._open_crypt()
        if master_key is not None and provider is None:
            raise ConfigurationError("A provider must be given if a master_key is given")
        with wrap_encryption_errors():
            ctx = crypt.rewrap_many_data_key_context(
                dict(filter), provider, None if master_key is None else dict(master_key)
            )
            rewrapped = await self._run(ctx)
        if rewrapped is None:
            return RewrapManyDataKeyResult()
        keys = RawBSONDocument(rewrapped)["v"]
        if not keys:
            return RewrapManyDataKeyResult()
        return RewrapManyDataKeyResult(await self._io.update_data_keys(keys))

    async def create_encrypted_collection(
        self,
        database: AsyncDatabase[Any],
        name: str,
        encrypted_fields: Mapping[str, Any],
        kms_provider: str | None = None,
        master_key: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> tuple[AsyncCollection[Any], Mapping[str, Any]]:
        """Create the Queryable Encryption collection ``name`` in ``database``: a data key
        (``kms_provider``, ``master_key``) for each field of ``encrypted_fields["fields"]``
        whose ``keyId`` is None, then the collection with those encryptedFields (spec,
        "Create Encrypted Collection Helper"); the collection and the completed
        encryptedFields. ``kwargs`` are further create options.

        A failure raises EncryptedCollectionError carrying the encryptedFields as far as they
        were completed.
        """
        self._open_crypt()
        fields = copy.deepcopy(dict(encrypted_fields))
        if not isinstance(fields.get("fields"), list):
            raise InvalidArgument("encrypted_fields must have a 'fields' array")
        for field in fields["fields"]:
            if isinstance(field, dict) and field.get("keyId", None) is None:
                try:
                    field["keyId"] = await self.create_data_key(kms_provider or "", master_key)
                except EncryptionError as exc:
                    raise EncryptedCollectionError(exc, fields) from exc
        try:
            collection = await create_with_encrypted_fields(database, name, fields, kwargs)
        except Exception as exc:
            raise EncryptedCollectionError(exc, fields) from exc
        return collection, fields

    async def close(self) -> None:
        """Release libmongocrypt's resources (the key vault client stays open: it is the
        caller's). Using the object afterwards raises InvalidOperation."""
        crypt, self._crypt = self._crypt, None
        if crypt is not None:
            crypt.close()
