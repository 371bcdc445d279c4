"""Helpers shared by the auth tests."""

from __future__ import annotations

import hashlib


class CountingPbkdf2:
    """hashlib.pbkdf2_hmac that counts its calls (to prove the SCRAM key cache is used)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        self.calls += 1
        return hashlib.pbkdf2_hmac(name, password, salt, iterations)
