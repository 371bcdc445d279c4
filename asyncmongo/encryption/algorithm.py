"""The names of the encryption algorithms and query types, PyMongo's spelling and values.

Client-side encryption spec, EncryptOpts: ``algorithm`` and ``queryType`` are strings that
libmongocrypt reads; these classes only name them.
"""

from __future__ import annotations

from typing import Final

__all__ = ["Algorithm", "QueryType"]


class Algorithm:
    """An algorithm for :meth:`AsyncClientEncryption.encrypt`.

    ``AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic`` gives the same ciphertext for the same
    value and key (so equality queries work); ``..._Random`` does not. ``INDEXED``,
    ``UNINDEXED`` and ``RANGE`` are Queryable Encryption's.
    """

    AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic: Final = (
        "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
    )
    AEAD_AES_256_CBC_HMAC_SHA_512_Random: Final = "AEAD_AES_256_CBC_HMAC_SHA_512-Random"
    INDEXED: Final = "Indexed"
    UNINDEXED: Final = "Unindexed"
    RANGE: Final = "Range"


class QueryType:
    """The query an ``Indexed`` or ``Range`` encrypted value is for."""

    EQUALITY: Final = "equality"
    RANGE: Final = "range"
