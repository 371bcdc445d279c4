"""Automatic encryption options on the client, and the automatic decryption they give.

Client-side encryption spec, "AutoEncryptionOpts" and "Automatic Decryption". With
``bypass_auto_encryption=True`` commands go out as written and every reply is decrypted:
libmongocrypt finds the encrypted values (BSON binary subtype 6) in the raw reply, the
client fetches their data keys from the key vault, and the reply is decoded once, decrypted.
Automatic *encryption* (query analysis through crypt_shared or mongocryptd) is not
implemented: options that need it raise ConfigurationError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asyncmongo.bson import decode
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption._binding import load
from asyncmongo.encryption.client_encryption import (
    key_vault_io,
    mongocrypt_options,
    wrap_encryption_errors,
)
from asyncmongo.encryption.key_vault import key_vault_collection
from asyncmongo.encryption.state_machine import run_state_machine
from asyncmongo.errors import ConfigurationError

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient

__all__ = ["AutoDecrypter", "AutoEncryptionOpts"]


@dataclass(frozen=True, slots=True)
class AutoEncryptionOpts:
    """Automatic encryption settings for ``AsyncMongoClient(auto_encryption_opts=...)``
    (PyMongo's names).

    - ``kms_providers`` and ``key_vault_namespace``: as for AsyncClientEncryption;
    - ``key_vault_client``: the client the key vault is read through (None: the encrypting
      client itself);
    - ``bypass_auto_encryption``: must be True for now: commands are sent as written and
      replies are decrypted automatically;
    - ``key_expiration_ms``: libmongocrypt's data key cache lifetime (None: 60 s);
    - ``kms_tls_options``: TLS options per KMS provider, as for AsyncClientEncryption.
    """

    kms_providers: Mapping[str, Any]
    key_vault_namespace: str
    key_vault_client: AsyncMongoClient[Any] | None = field(default=None, compare=False)
    bypass_auto_encryption: bool = False
    key_expiration_ms: int | None = None
    kms_tls_options: Mapping[str, Mapping[str, Any]] | None = None

    def decrypter_for(self, client: AsyncMongoClient[Any]) -> AutoDecrypter:
        """The decrypter of ``client``'s replies (the client calls it, and closes it)."""
        return AutoDecrypter(self, client)

    def __post_init__(self) -> None:
        if not self.bypass_auto_encryption:
            raise ConfigurationError(
                "automatic encryption (query analysis by crypt_shared or mongocryptd) is not "
                "supported yet: AutoEncryptionOpts(bypass_auto_encryption=True) gives "
                "automatic decryption, and AsyncClientEncryption explicit encryption"
            )


class AutoDecrypter:
    """Decrypts a client's replies (``Executor.decrypt_reply``); owned and closed by the
    client."""

    __slots__ = ("_binding", "_crypt", "_io")

    def __init__(self, opts: AutoEncryptionOpts, client: AsyncMongoClient[Any]) -> None:
        self._binding = load()
        key_vault_client = opts.key_vault_client or client
        key_vault = key_vault_collection(key_vault_client, opts.key_vault_namespace)
        self._io = key_vault_io(self._binding, key_vault, opts.kms_tls_options)
        options = mongocrypt_options(self._binding, opts.kms_providers, opts.key_expiration_ms)
        try:
            self._crypt: Any = self._binding.MongoCrypt(options, self._io)
        except self._binding.MongoCryptError as exc:
            raise ConfigurationError(str(exc)) from exc

    async def decrypt(self, reply: Any, codec_options: CodecOptions) -> dict[str, Any]:
        """``reply`` (a RawBSONDocument) decrypted, decoded with ``codec_options``."""
        with wrap_encryption_errors():
            ctx = self._crypt.decryption_context(reply.raw)
            with ctx:
                decrypted = await run_state_machine(self._binding, ctx, self._io)
        result: dict[str, Any] = decode(decrypted or reply.raw, codec_options)
        return result

    def close(self) -> None:
        """Release libmongocrypt's resources."""
        self._crypt.close()
