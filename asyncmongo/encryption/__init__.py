"""In-use encryption: client-side field level encryption on libmongocrypt.

``pip install 'asyncmongo[encryption]'`` adds pymongocrypt, which bundles libmongocrypt; it is
imported when an :class:`AsyncClientEncryption` is first made, so asyncmongo runs without it.
The names are PyMongo's::

    from asyncmongo.encryption import Algorithm, AsyncClientEncryption

    async with AsyncClientEncryption(
        {"local": {"key": master_key}}, "keyvault.datakeys", client, CodecOptions()
    ) as client_encryption:
        key_id = await client_encryption.create_data_key("local", key_alt_names=["ssn"])
        ciphertext = await client_encryption.encrypt(
            "457-55-5462", Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic, key_id=key_id
        )
        assert await client_encryption.decrypt(ciphertext) == "457-55-5462"
"""

from __future__ import annotations

from asyncmongo.encryption.algorithm import Algorithm, QueryType
from asyncmongo.encryption.auto import AutoEncryptionOpts
from asyncmongo.encryption.client_encryption import AsyncClientEncryption, RewrapManyDataKeyResult
from asyncmongo.encryption.kms_connect import KmsConnectCallback
from asyncmongo.encryption.range_opts import RangeOpts
from asyncmongo.errors import EncryptedCollectionError, EncryptionError

__all__ = [
    "Algorithm",
    "AsyncClientEncryption",
    "AutoEncryptionOpts",
    "EncryptedCollectionError",
    "EncryptionError",
    "KmsConnectCallback",
    "QueryType",
    "RangeOpts",
    "RewrapManyDataKeyResult",
]
