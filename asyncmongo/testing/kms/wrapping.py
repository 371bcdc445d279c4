"""How the simulated KMS servers wrap data keys: reversibly, bound to a master key name.

Not the real services' cryptography, only its contract: what one master key wraps only that
master key unwraps, and tampering is detected. A SHA-256 keystream (HMAC of the server
secret, the nonce and a counter) masks the data; an HMAC-SHA-256 tag covers the master key
name, the nonce and the masked bytes. Format: ``b"SIMKMS1" | len(name) (2 bytes) | name |
nonce (16) | masked | tag (32)``; carrying the name lets AWS's Decrypt (which is given only
the blob) answer with the key's id.
"""

from __future__ import annotations

import hashlib
import hmac
import os

__all__ = ["KeyWrapper", "UnwrapError"]

MAGIC = b"SIMKMS1"
NONCE_SIZE = 16
TAG_SIZE = 32


class UnwrapError(ValueError):
    """The blob was not wrapped here, or by another master key, or was altered."""


class KeyWrapper:
    """Wraps and unwraps with one secret (random unless given)."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret if secret is not None else os.urandom(32)

    def _keystream(self, nonce: bytes, size: int) -> bytes:
        blocks = (hmac.new(self._secret, nonce + i.to_bytes(4, "big"), hashlib.sha256).digest()
                  for i in range((size + 31) // 32))
        return b"".join(blocks)[:size]

    def _tag(self, name: bytes, nonce: bytes, masked: bytes) -> bytes:
        message = len(name).to_bytes(2, "big") + name + nonce + masked
        return hmac.new(self._secret, b"tag" + message, hashlib.sha256).digest()

    def wrap(self, master_key: str, plaintext: bytes) -> bytes:
        name = master_key.encode()
        nonce = os.urandom(NONCE_SIZE)
        masked = bytes(a ^ b for a, b in zip(plaintext, self._keystream(nonce, len(plaintext)),
                                             strict=True))
        return (MAGIC + len(name).to_bytes(2, "big") + name + nonce + masked
                + self._tag(name, nonce, masked))

    def master_key_of(self, blob: bytes) -> str:
        """The master key name a blob says it was wrapped with (not yet verified)."""
        if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 2:
            raise UnwrapError("not a key wrapped by this KMS")
        size = int.from_bytes(blob[len(MAGIC):len(MAGIC) + 2], "big")
        return blob[len(MAGIC) + 2:len(MAGIC) + 2 + size].decode(errors="replace")

    def unwrap(self, master_key: str | None, blob: bytes) -> bytes:
        """The plaintext of ``blob``; with ``master_key`` given, it must be the one that
        wrapped it."""
        name = self.master_key_of(blob).encode()
        if master_key is not None and name != master_key.encode():
            raise UnwrapError(f"the key was wrapped by another master key ({name.decode()!r})")
        start = len(MAGIC) + 2 + len(name)
        nonce, rest = blob[start:start + NONCE_SIZE], blob[start + NONCE_SIZE:]
        if len(nonce) < NONCE_SIZE or len(rest) < TAG_SIZE:
            raise UnwrapError("truncated wrapped key")
        masked, tag = rest[:-TAG_SIZE], rest[-TAG_SIZE:]
        if not hmac.compare_digest(tag, self._tag(name, nonce, masked)):
            raise UnwrapError("the wrapped key does not verify (altered, or another KMS)")
        return bytes(a ^ b for a, b in zip(masked, self._keystream(nonce, len(masked)),
                                           strict=True))
