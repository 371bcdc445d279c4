"""Helpers shared by the auth tests."""

from __future__ import annotations

import hashlib
import socket


class CountingPbkdf2:
    """hashlib.pbkdf2_hmac that counts its calls (to prove the SCRAM key cache is used)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        self.calls += 1
        return hashlib.pbkdf2_hmac(name, password, salt, iterations)


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
