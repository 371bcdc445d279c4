"""The I/O libmongocrypt asks of the driver, done with asyncmongo's own operations.

libmongocrypt (through pymongocrypt) calls back for BSON encoding, key vault reads and
writes, and KMS round trips. :class:`KeyVaultIO` does the key vault work on the key vault
collection it is given: reads with read concern majority, writes with write concern majority
(client-side encryption spec, "Key Vault collection"); KMS round trips go through its
:class:`~asyncmongo.encryption.kms.KmsSession`. Documents pass through as BSON bytes
(RawBSONDocument), never decoded on the way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from asyncmongo.bson import encode
from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.encryption.kms import KmsSession
from asyncmongo.errors import InvalidArgument, InvalidOperation
from asyncmongo.operations import UpdateOne

if TYPE_CHECKING:
    from asyncmongo.client import AsyncMongoClient
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.results import BulkWriteResult

__all__ = ["KeyVaultIO", "key_vault_collection"]

RAW_DOCUMENTS: CodecOptions[RawBSONDocument] = CodecOptions(document_class=RawBSONDocument)


def key_vault_collection(
    client: AsyncMongoClient[Any], namespace: str
) -> AsyncCollection[RawBSONDocument]:
    """The key vault collection ``namespace`` ("db.coll") of ``client``, as the spec reads
    and writes it: raw documents, majority read and write concerns."""
    db_name, dot, coll_name = namespace.partition(".")
    if not (db_name and dot and coll_name):
        raise InvalidArgument(
            f"key_vault_namespace must be 'database.collection', not {namespace!r}"
        )
    return client[db_name].get_collection(
        coll_name,
        codec_options=RAW_DOCUMENTS,
        read_concern=ReadConcern("majority"),
        write_concern=WriteConcern(w="majority"),
    )


class KeyVaultIO:
    """The callbacks libmongocrypt's contexts need, over one key vault collection.

    pymongocrypt checks the callback against its ``AsyncMongoCryptCallback`` ABC; this class
    is registered as a virtual subclass of it when pymongocrypt is loaded (it has no stubs,
    so subclassing would type as Any).
    """

    __slots__ = ("_key_vault", "_kms", "_mongocrypt_error", "credential_providers")

    def __init__(self, key_vault: AsyncCollection[RawBSONDocument], kms: KmsSession,
                 mongocrypt_error: type[Exception],
                 credential_providers: Mapping[str, Callable[[], Any]] | None = None) -> None:
        self._key_vault = key_vault
        self._kms = kms
        self._mongocrypt_error = mongocrypt_error
        #: The user's custom KMS credential providers (``{"aws": provider}``), used when
        #: libmongocrypt asks for on-demand credentials.
        self.credential_providers = dict(credential_providers or {})

    def bson_encode(self, doc: Mapping[str, Any]) -> bytes:
        """BSON bytes of ``doc`` (KMS providers, master keys, key alt names)."""
        return encode(doc)

    async def fetch_keys(self, filter: bytes) -> AsyncIterator[bytes]:
        """The key documents matching libmongocrypt's ``filter``, as BSON bytes."""
        async for key in self._key_vault.find(RawBSONDocument(filter)):
            yield key.raw

    async def insert_data_key(self, data_key: bytes) -> Binary:
        """Insert the new key document; its ``_id`` (a UUID Binary)."""
        document = RawBSONDocument(data_key)
        key_id = document.get("_id")
        if not (isinstance(key_id, Binary) and key_id.subtype == UUID_SUBTYPE):
            raise InvalidArgument(f"a data key's _id must be a UUID Binary, not {key_id!r}")
        await self._key_vault.insert_one(document)
        return key_id

    async def kms_request(self, kms_context: Any) -> None:
        """One attempt at a KMS round trip (libmongocrypt decides on retries)."""
        await self._kms.request(kms_context, self._mongocrypt_error)

    async def update_data_keys(self, documents: Sequence[Mapping[str, Any]]) -> BulkWriteResult:
        """Replace the rewrapped keys' ``keyMaterial`` and ``masterKey`` (rewrapManyDataKey),
        one ``updateOne`` per key in one bulk write, ``updateDate`` set by the server; the
        BulkWriteResult."""
        requests = [
            UpdateOne(
                {"_id": key["_id"]},
                {"$set": {"masterKey": key["masterKey"], "keyMaterial": key["keyMaterial"]},
                 "$currentDate": {"updateDate": True}},
            )
            for key in documents
        ]
        return await self._key_vault.bulk_write(requests)

    async def collection_info(self, database: str, filter: bytes) -> list[bytes] | None:
        raise InvalidOperation("automatic encryption (JSON schemas) is not supported")

    async def mark_command(self, database: str, cmd: bytes) -> bytes:
        raise InvalidOperation("automatic encryption (query analysis) is not supported")

    async def close(self) -> None:
        """Nothing to release: the key vault client belongs to the caller."""
