"""Automatic encryption and decryption on a client: AutoEncryptionOpts and AutoEncrypter.

Client-side encryption spec, "AutoEncryptionOpts", "Auto encrypt and decrypt" and "Managing
mongocryptd". A client with ``auto_encryption_opts`` passes every command it sends through
libmongocrypt's encryption context (:meth:`AutoEncrypter.encrypt`, called by the executor
once per attempt, after the command is built and before command monitoring sees it) and
every reply through the decryption context (:meth:`AutoEncrypter.decrypt`).

Encrypting a command may need: the collection's JSON schema (``schema_map``, or
listCollections on the *metadata client*), the query analyzer's markings (the crypt_shared
library in process, or mongocryptd, or any server speaking its protocol at
``mongocryptd_uri`` such as :class:`asyncmongo.testing.QueryAnalyzer`), and data keys (a find
on the key vault through the *key vault client*). The key vault and metadata clients are
the user's ``key_vault_client``, the client itself (``maxPoolSize=0``) or an internal client
with the client's own settings but ``minPoolSize=0`` and no auto encryption (spec,
"keyVaultClient, metadataClient, and the internal MongoClient"); so a command holding a
connection never waits for another connection of the same bounded pool.

Automatic encryption is an enterprise only feature that only applies to operations on a
collection. Automatic encryption is not supported for operations on a database or view, and
operations that are not bypassed will result in error. To bypass automatic encryption for
all operations, set bypass_auto_encryption=True in AutoEncryptionOpts. Automatic encryption
requires the authenticated user to have the listCollections privilege action. Enabling
client side encryption reduces the maximum write batch size (2 MiB before encryption) and
may have a negative performance impact.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asyncmongo.bson import decode, encode
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.encryption._binding import Binding, load
from asyncmongo.encryption.client_encryption import wrap_encryption_errors
from asyncmongo.encryption.credential_providers import (
    CredentialProviders,
    validate_credential_providers,
)
from asyncmongo.encryption.key_vault import RAW_DOCUMENTS, KeyVaultIO, key_vault_collection
from asyncmongo.encryption.kms import KmsSession, kms_ssl_contexts
from asyncmongo.encryption.kms_connect import KmsConnectCallback
from asyncmongo.encryption.state_machine import run_state_machine
from asyncmongo.errors import (
    ConfigurationError,
    EncryptionError,
    InvalidArgument,
    ServerSelectionTimeoutError,
)
from asyncmongo.runtime.timeout import timeout

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient
    from asyncmongo.core.wire.op_msg import DocumentSequence

__all__ = ["AutoEncrypter", "AutoEncryptionOpts"]

DEFAULT_MONGOCRYPTD_URI = "mongodb://localhost:27020"
#: Spec, "Spawning mongocryptd": appended unless the spawn arguments give their own.
IDLE_SHUTDOWN_ARG = "--idleShutdownTimeoutSecs"
DEFAULT_SPAWN_ARGS = (f"{IDLE_SHUTDOWN_ARG}=60",)
#: Spec, "Connecting to mongocryptd".
MONGOCRYPTD_TIMEOUT_MS = 10000
#: The block of an operation whose deadline has passed: it expires at once.
_EXPIRED_S = 1e-6


@dataclass(frozen=True, slots=True)
class AutoEncryptionOpts:
    """Automatic encryption settings for ``AsyncMongoClient(auto_encryption_opts=...)``,
    PyMongo's names and order.

    - ``kms_providers``, ``key_vault_namespace``: as for AsyncClientEncryption;
    - ``key_vault_client``: the client data keys are read through (None: the internal
      client, or the client itself when its ``maxPoolSize`` is 0);
    - ``schema_map``: ``{"db.coll": <JSON schema>}``. Supplying a schemaMap provides more
      security than relying on JSON Schemas obtained from the server. It protects against a
      malicious server advertising a false JSON Schema, which could trick the client into
      sending unencrypted data that should be encrypted. Schemas supplied in the schemaMap
      only apply to configuring automatic encryption for client side encryption. Other
      validation rules in the JSON schema will not be enforced by the driver and will result
      in an error;
    - ``bypass_auto_encryption``: send commands as written (replies are still decrypted);
    - ``mongocryptd_uri``, ``mongocryptd_bypass_spawn``, ``mongocryptd_spawn_path``,
      ``mongocryptd_spawn_args``: where the query analyzer listens and how to start it
      (spawned when crypt_shared is not loaded, unless bypassed; ``--idleShutdownTimeoutSecs=60``
      is appended to the arguments unless they set it);
    - ``crypt_shared_lib_path``, ``crypt_shared_lib_required``: the crypt_shared library
      (all clients of a process should use the same path: loading two is an error);
    - ``bypass_query_analysis``: no query analysis (explicit encryption of indexed fields
      without crypt_shared);
    - ``encrypted_fields_map``: ``{"db.coll": <encryptedFields>}`` for Queryable Encryption.
      Supplying an encryptedFieldsMap provides more security than relying on an
      encryptedFields obtained from the server;
    - ``key_expiration_ms``: libmongocrypt's data key cache lifetime (None: 60 s);
    - ``kms_tls_options``: TLS options per KMS provider, as for AsyncClientEncryption;
    - ``kms_connect_callback``: opens the connections to KMS hosts (e.g. through an HTTP
      proxy), as for AsyncClientEncryption;
    - ``credential_providers``: ``{"aws": provider}`` to fill an empty
      ``kms_providers["aws"]``, as for AsyncClientEncryption.

    If automatic encryption fails on an operation, use a client configured with
    bypass_auto_encryption=True and AsyncClientEncryption.encrypt() to encrypt values.
    """

    kms_providers: Mapping[str, Any]
    key_vault_namespace: str
    key_vault_client: AsyncMongoClient[Any] | None = field(default=None, compare=False)
    schema_map: Mapping[str, Any] | None = None
    bypass_auto_encryption: bool = False
    mongocryptd_uri: str = DEFAULT_MONGOCRYPTD_URI
    mongocryptd_bypass_spawn: bool = False
    mongocryptd_spawn_path: str = "mongocryptd"
    mongocryptd_spawn_args: Sequence[str] | None = None
    crypt_shared_lib_path: str | None = None
    crypt_shared_lib_required: bool = False
    bypass_query_analysis: bool = False
    encrypted_fields_map: Mapping[str, Any] | None = None
    key_expiration_ms: int | None = None
    kms_tls_options: Mapping[str, Mapping[str, Any]] | None = None
    kms_connect_callback: KmsConnectCallback | None = field(default=None, compare=False)
    credential_providers: CredentialProviders | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kms_connect_callback is not None and not callable(self.kms_connect_callback):
            raise InvalidArgument("kms_connect_callback must be callable")
        validate_credential_providers(self.credential_providers, self.kms_providers)
        for name in ("schema_map", "encrypted_fields_map"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise InvalidArgument(f"{name} must be a mapping of namespace to document")
        if isinstance(self.mongocryptd_spawn_args, str):
            raise InvalidArgument("mongocryptd_spawn_args must be a list of strings")

    def spawn_arguments(self) -> list[str]:
        """mongocryptd's command line after the executable: the given arguments, and
        ``--idleShutdownTimeoutSecs=60`` unless they set it (in either spelling)."""
        args = list(self.mongocryptd_spawn_args or ())
        if not any(arg == IDLE_SHUTDOWN_ARG or arg.startswith(f"{IDLE_SHUTDOWN_ARG}=")
                   for arg in args):
            args.extend(DEFAULT_SPAWN_ARGS)
        return args

    def decrypter_for(self, client: AsyncMongoClient[Any]) -> AutoEncrypter:
        """The encrypter of ``client``'s commands and decrypter of its replies (the client
        calls it once, and closes it)."""
        return AutoEncrypter(self, client)


def bounded_by(deadline: float | None) -> AbstractContextManager[Any]:
    """CSOT spec, "Client Side Encryption": the operation's timeoutMS bounds the work of
    encrypting its command or decrypting its reply (listCollections, key vault finds,
    mongocryptd, KMS requests), as a timeout block ending at the operation's ``deadline``
    (a loop time; None or inf: no limit, and any enclosing block still applies)."""
    if deadline is None or deadline == math.inf:
        return nullcontext()
    remaining = deadline - asyncio.get_running_loop().time()
    return timeout(max(remaining, _EXPIRED_S))  # timeout(0) would mean "no limit"


class AutoEncryptionIO(KeyVaultIO):
    """libmongocrypt's I/O for automatic encryption: the key vault (KeyVaultIO), the
    collection infos (listCollections on the metadata client) and the markings (the query
    analyzer at ``mongocryptd_uri``, spawned when allowed)."""

    __slots__ = ("_metadata", "_mongocryptd", "_opts", "_spawned", "spawned_processes")

    def __init__(self, key_vault: Any, kms: KmsSession, mongocrypt_error: type[Exception],
                 metadata: AsyncMongoClient[Any] | None,
                 mongocryptd: AsyncMongoClient[Any] | None, opts: AutoEncryptionOpts) -> None:
        super().__init__(key_vault, kms, mongocrypt_error, opts.credential_providers)
        self._metadata = metadata
        self._mongocryptd = mongocryptd
        self._opts = opts
        self._spawned = False
        #: The mongocryptd processes started (they exit on their own when idle).
        self.spawned_processes: list[subprocess.Popen[bytes]] = []

    async def collection_info(self, database: str, filter: bytes) -> list[bytes] | None:
        """listCollections on the metadata client: the matching collection infos as BSON."""
        if self._metadata is None:  # pragma: no cover - libmongocrypt asks only if encrypting
            raise EncryptionError(ConfigurationError("no metadata client"))
        cursor = await self._metadata[database].list_collections(filter=decode(filter))
        return [encode(info) async for info in cursor]

    async def mark_command(self, database: str, cmd: bytes) -> bytes:
        """The query analyzer's reply to ``cmd`` (spawning mongocryptd first, and again when
        it cannot be reached, unless spawning is bypassed)."""
        client = self._mongocryptd
        if client is None:
            raise EncryptionError(ConfigurationError(
                "automatic encryption needs a query analyzer: neither the crypt_shared library "
                "nor mongocryptd is available"))
        spawn = not self._opts.mongocryptd_bypass_spawn
        if spawn and not self._spawned:
            self._spawn()
        try:
            return await self._run_mark(client, database, cmd)
        except ServerSelectionTimeoutError:
            if not spawn:
                raise
        self._spawn()  # spec: spawn again whenever server selection fails, then retry once
        return await self._run_mark(client, database, cmd)

    @staticmethod
    async def _run_mark(client: AsyncMongoClient[Any], database: str, cmd: bytes) -> bytes:
        reply = await client[database].command(RawBSONDocument(cmd),
                                               codec_options=RAW_DOCUMENTS)
        assert isinstance(reply, RawBSONDocument)
        return reply.raw

    def _spawn(self) -> None:
        """Start mongocryptd detached, its output discarded (spec, "Spawning mongocryptd")."""
        self._spawned = True
        path = self._opts.mongocryptd_spawn_path or "mongocryptd"
        try:
            process = subprocess.Popen(
                [path, *self._opts.spawn_arguments()],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise EncryptionError(ConfigurationError(
                f"automatic encryption needs a query analyzer: the crypt_shared library is "
                f"not loaded and mongocryptd could not be spawned ({path!r}: {exc}). Install "
                f"crypt_shared (crypt_shared_lib_path) or mongocryptd, or run one and set "
                f"mongocryptd_uri with mongocryptd_bypass_spawn=True")) from exc
        self.spawned_processes.append(process)

    def reap(self) -> None:
        """Collect spawned mongocryptd processes that have exited (no zombies)."""
        self.spawned_processes = [p for p in self.spawned_processes if p.poll() is None]


class AutoEncrypter:
    """A client's automatic encryption: owned and closed by the client.

    ``encrypt`` is the executor's command hook (None with ``bypass_auto_encryption``);
    ``decrypt`` its reply hook.
    """

    __slots__ = ("_binding", "_crypt", "_internal", "_io", "_mongocryptd", "_opts",
                 "crypt_shared_version", "encrypt_command")

    def __init__(self, opts: AutoEncryptionOpts, client: AsyncMongoClient[Any]) -> None:
        self._binding: Binding = load()
        self._opts = opts
        self._internal: AsyncMongoClient[Any] | None = None
        self._mongocryptd: AsyncMongoClient[Any] | None = None
        unbounded = client.options.max_pool_size == 0
        if opts.key_vault_client is not None:
            key_vault_client = opts.key_vault_client
        elif unbounded:
            key_vault_client = client
        else:
            key_vault_client = self._internal_client(client)
        metadata: AsyncMongoClient[Any] | None = None
        if not opts.bypass_auto_encryption:
            metadata = client if unbounded else self._internal_client(client)
        self._binding.AsyncMongoCryptCallback.register(AutoEncryptionIO)
        self._io = AutoEncryptionIO(
            key_vault_collection(key_vault_client, opts.key_vault_namespace),
            KmsSession(kms_ssl_contexts(opts.kms_tls_options),
                       connect_callback=opts.kms_connect_callback),
            self._binding.MongoCryptError,
            metadata, None, opts)
        self._crypt: Any = self._make_crypt(opts)
        version = self._crypt.crypt_shared_lib_version
        #: The crypt_shared library's version string, None when it is not loaded.
        self.crypt_shared_version: str | None = None if version is None else str(version)
        if (not opts.bypass_auto_encryption and not opts.bypass_query_analysis
                and self.crypt_shared_version is None):
            from asyncmongo.client import AsyncMongoClient

            self._mongocryptd = AsyncMongoClient(
                opts.mongocryptd_uri, serverSelectionTimeoutMS=MONGOCRYPTD_TIMEOUT_MS,
                connectTimeoutMS=MONGOCRYPTD_TIMEOUT_MS)
            self._io._mongocryptd = self._mongocryptd
        self.encrypt_command = None if opts.bypass_auto_encryption else self.encrypt

    def _internal_client(self, client: AsyncMongoClient[Any]) -> AsyncMongoClient[Any]:
        if self._internal is None:
            self._internal = client._internal_client()
        return self._internal

    def _make_crypt(self, opts: AutoEncryptionOpts) -> Any:
        extra: dict[str, Any] = {}
        if opts.key_expiration_ms is not None:
            extra["key_expiration_ms"] = opts.key_expiration_ms
        try:
            options = self._binding.MongoCryptOptions(
                {name: dict(value) for name, value in opts.kms_providers.items()},
                schema_map=None if opts.schema_map is None else encode(opts.schema_map),
                encrypted_fields_map=(None if opts.encrypted_fields_map is None
                                      else encode(opts.encrypted_fields_map)),
                bypass_query_analysis=opts.bypass_query_analysis,
                crypt_shared_lib_path=opts.crypt_shared_lib_path,
                crypt_shared_lib_required=opts.crypt_shared_lib_required,
                bypass_encryption=opts.bypass_auto_encryption,
                enable_multiple_collinfo=True,
                **extra,
            )
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(str(exc)) from exc
        try:
            return self._binding.MongoCrypt(options, self._io)
        except self._binding.MongoCryptError as exc:
            raise ConfigurationError(str(exc)) from exc

    def encrypted_fields_for(self, namespace: str) -> Mapping[str, Any] | None:
        """The ``encrypted_fields_map`` entry of ``"db.collection"``, if any."""
        fields_map = self._opts.encrypted_fields_map
        return None if fields_map is None else fields_map.get(namespace)

    async def encrypt(self, database: str, document: Mapping[str, Any],
                      sequences: Sequence[DocumentSequence],
                      deadline: float | None = None) -> dict[str, Any]:
        """The command to send in place of ``document`` (with its kind-1 ``sequences``
        folded in, spec "Size limits for Write Commands"), encrypted by libmongocrypt
        by the operation's ``deadline``."""
        command = dict(document)
        for sequence in sequences:
            command[sequence.identifier] = [RawBSONDocument(doc) for doc in sequence.documents]
        with wrap_encryption_errors():
            ctx = self._crypt.encryption_context(database, encode(command))
            with ctx, bounded_by(deadline):
                encrypted = await run_state_machine(self._binding, ctx, self._io)
        self._io.reap()
        if encrypted is None:  # pragma: no cover - an encryption context ends READY
            return command
        result: dict[str, Any] = decode(encrypted)
        return result

    async def decrypt(self, reply: Any, codec_options: CodecOptions,
                      deadline: float | None = None) -> dict[str, Any]:
        """``reply`` (a RawBSONDocument) decrypted by the operation's ``deadline``, decoded
        with ``codec_options``."""
        with wrap_encryption_errors():
            ctx = self._crypt.decryption_context(reply.raw)
            with ctx, bounded_by(deadline):
                decrypted = await run_state_machine(self._binding, ctx, self._io)
        result: dict[str, Any] = decode(decrypted or reply.raw, codec_options)
        return result

    @property
    def spawned_processes(self) -> list[subprocess.Popen[bytes]]:
        """The mongocryptd processes this client spawned and that still run."""
        self._io.reap()
        return list(self._io.spawned_processes)

    async def close(self) -> None:
        """Release libmongocrypt and close the internal and mongocryptd clients (a spawned
        mongocryptd exits by itself when idle)."""
        self._crypt.close()
        for client in (self._internal, self._mongocryptd):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()
        self._io.reap()


#: The name of the decrypt-only release.
AutoDecrypter = AutoEncrypter
