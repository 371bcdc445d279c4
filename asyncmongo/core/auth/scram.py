"""SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as a pure client state machine.

:class:`ScramClient` speaks the SCRAM messages themselves (bytes in, bytes out); the SASL command
documents that carry them are built in :mod:`asyncmongo.core.auth.conversation`. The MongoDB
specifics (auth spec, "SCRAM-SHA-1" and "SCRAM-SHA-256"):

- usernames are never SASLprep'ed, only escaped (``=`` → ``=3D``, ``,`` → ``=2C``);
- SCRAM-SHA-1 uses HEX(MD5("username:mongo:password")) as the password;
- SCRAM-SHA-256 uses SASLprep(password);
- no channel binding: the client-first-message starts with ``n,,``;
- the iteration count must be at least 4096 (a man-in-the-middle downgrade defence);
- computed keys are cached (:class:`ScramCache`) by password, salt, iteration count and
  mechanism, so a pool opening many connections runs PBKDF2 once.

The nonce is injected (``nonce=``); :func:`generate_nonce` is the default source (``secrets``).
Every failure caused by the server's messages raises
:class:`~asyncmongo.errors.OperationFailure`, as PyMongo does.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from asyncmongo.core.auth.saslprep import saslprep
from asyncmongo.errors import ConfigurationError, InvalidOperation, OperationFailure

__all__ = [
    "MIN_ITERATIONS",
    "Pbkdf2",
    "ScramCache",
    "ScramCacheStatistics",
    "ScramClient",
    "ScramKeys",
    "ScramMechanism",
    "derive_keys",
    "escape_username",
    "generate_nonce",
    "mongo_password_digest",
    "parse_attributes",
    "prepare_password",
    "unescape_username",
]

#: auth spec: drivers MUST error when the server asks for fewer iterations.
MIN_ITERATIONS = 4096

#: ``hashlib.pbkdf2_hmac``'s signature: (hash name, password, salt, iterations) -> key.
Pbkdf2 = Callable[[str, bytes, bytes, int], bytes]

#: The gs2 header without channel binding, base64-encoded ("biws") in client-final.
GS2_HEADER = b"n,,"


class ScramMechanism(enum.Enum):
    """The two SCRAM variants MongoDB speaks; the value is the SASL mechanism name."""

    SCRAM_SHA_1 = "SCRAM-SHA-1"
    SCRAM_SHA_256 = "SCRAM-SHA-256"

    @property
    def hash_name(self) -> str:
        """The ``hashlib`` name of the mechanism's hash function."""
        return "sha1" if self is ScramMechanism.SCRAM_SHA_1 else "sha256"


@dataclass(frozen=True, slots=True)
class ScramKeys:
    """The keys derived from a salted password (the cached value; secrets kept out of repr)."""

    salted_password: bytes = field(repr=False)
    client_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class ScramCacheStatistics:
    """How a :class:`ScramCache` has been used (hits avoided a PBKDF2 run)."""

    entries: int
    hits: int
    misses: int


def mongo_password_digest(username: str, password: str) -> str:
    """MongoDB's SCRAM-SHA-1 password: HEX(MD5(UTF8(username + ":mongo:" + password)))."""
    data = f"{username}:mongo:{password}".encode()
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def prepare_password(mechanism: ScramMechanism, username: str, password: str) -> bytes:
    """The password as SCRAM's ``Normalize(password)`` sees it, per the auth spec."""
    if mechanism is ScramMechanism.SCRAM_SHA_1:
        return mongo_password_digest(username, password).encode()
    return saslprep(password).encode()


def derive_keys(
    mechanism: ScramMechanism,
    password: bytes,
    salt: bytes,
    iterations: int,
    pbkdf2: Pbkdf2 = hashlib.pbkdf2_hmac,
) -> ScramKeys:
    """RFC 5802 section 3: SaltedPassword = Hi(password, salt, i), ClientKey, ServerKey,
    StoredKey = H(ClientKey)."""
    salted = pbkdf2(mechanism.hash_name, password, salt, iterations)
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramKeys(
        salted_password=salted,
        client_key=client_key,
        server_key=_hmac(mechanism, salted, b"Server Key"),
        stored_key=hashlib.new(mechanism.hash_name, client_key).digest(),
    )


class ScramCache:
    """The auth spec's SCRAM credential cache: derived keys by (password, salt, iterations,
    mechanism), least recently used dropped first.

    The password part of the key is a SHA-256 of the prepared password, so the cache holds no
    password. ``pbkdf2`` is injectable so tests can count key derivations.
    """

    __slots__ = ("_entries", "_hits", "_max_entries", "_misses", "_pbkdf2")

    def __init__(self, max_entries: int = 8, pbkdf2: Pbkdf2 = hashlib.pbkdf2_hmac) -> None:
        if max_entries < 1:
            raise ConfigurationError("ScramCache needs room for at least one entry")
        self._entries: OrderedDict[tuple[bytes, bytes, int, str], ScramKeys] = OrderedDict()
        self._max_entries = max_entries
        self._pbkdf2 = pbkdf2
        self._hits = 0
        self._misses = 0

    def keys(
        self, mechanism: ScramMechanism, password: bytes, salt: bytes, iterations: int
    ) -> ScramKeys:
        """The derived keys, computed (one PBKDF2 run) only on a cache miss."""
        key = (hashlib.sha256(password).digest(), salt, iterations, mechanism.value)
        found = self._entries.get(key)
        if found is not None:
            self._hits += 1
            self._entries.move_to_end(key)
            return found
        self._misses += 1
        keys = derive_keys(mechanism, password, salt, iterations, self._pbkdf2)
        self._entries[key] = keys
        if len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
        return keys

    def statistics(self) -> ScramCacheStatistics:
        return ScramCacheStatistics(len(self._entries), self._hits, self._misses)

    def __repr__(self) -> str:
        return (
            f"<ScramCache {len(self._entries)} entries, {self._hits} hits, "
            f"{self._misses} misses>"
        )


def generate_nonce() -> str:
    """A fresh client nonce: 24 random bytes from ``secrets``, base64 (printable, no comma)."""
    return base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def escape_username(username: str) -> str:
    """RFC 5802 saslname: ``=`` → ``=3D`` and ``,`` → ``=2C`` (no SASLprep: auth spec)."""
    return username.replace("=", "=3D").replace(",", "=2C")


_SASLNAME = re.compile(r"(?:[^=,]|=2C|=3D)*")
_ESCAPES = re.compile(r"=2C|=3D")


def unescape_username(saslname: str) -> str:
    """The inverse of :func:`escape_username`; a stray ``=`` or ``,`` raises OperationFailure."""
    if _SASLNAME.fullmatch(saslname) is None:
        raise OperationFailure("SCRAM: invalid escape sequence in the username")
    return _ESCAPES.sub(lambda m: "," if m.group() == "=2C" else "=", saslname)


def parse_attributes(message: bytes, what: str) -> dict[str, str]:
    """Split a SCRAM message ``a=...,b=...`` into {attribute: value}.

    Raises OperationFailure for non-UTF-8 bytes, an attribute without ``=``, a name that is not a
    single letter, or a repeated attribute.
    """
    try:
        text = bytes(message).decode("utf-8")
    except UnicodeDecodeError:
        raise OperationFailure(f"SCRAM: the {what} is not valid UTF-8") from None
    attributes: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1 or not name.isalpha() or name in attributes:
            raise OperationFailure(f"SCRAM: malformed {what}")
        attributes[name] = value
    return attributes


class _State(enum.Enum):
    INITIAL = "initial"
    SENT_CLIENT_FIRST = "sent client-first"
    SENT_CLIENT_FINAL = "sent client-final"
    DONE = "done"


class ScramClient:
    """The client side of one SCRAM exchange.

    ``password`` is the prepared password (:func:`prepare_password`; the RFC test vectors pass
    the plain bytes). Call :meth:`client_first`, then :meth:`client_final` with the
    server-first-message, then :meth:`verify_server_final` with the server-final-message.
    """

    __slots__ = (
        "_auth_message",
        "_cache",
        "_client_first_bare",
        "_keys",
        "_mechanism",
        "_nonce",
        "_password",
        "_state",
        "_username",
    )

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: bytes,
        *,
        nonce: str,
        cache: ScramCache | None = None,
    ) -> None:
        if not nonce or not nonce.isascii() or not nonce.isprintable() or "," in nonce:
            raise ConfigurationError("a SCRAM nonce is printable ASCII without commas")
        self._mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce
        self._cache = cache if cache is not None else ScramCache(max_entries=1)
        self._client_first_bare = f"n={escape_username(username)},r={nonce}".encode()
        self._auth_message = b""
        self._keys: ScramKeys | None = None
        self._state = _State.INITIAL

    @property
    def mechanism(self) -> ScramMechanism:
        return self._mechanism

    @property
    def nonce(self) -> str:
        """The client nonce (the server's nonce must extend it)."""
        return self._nonce

    @property
    def done(self) -> bool:
        """True once the server's signature has been verified."""
        return self._state is _State.DONE

    def client_first(self) -> bytes:
        """The client-first-message: ``n,,n=<user>,r=<nonce>``."""
        self._expect(_State.INITIAL)
        self._state = _State.SENT_CLIENT_FIRST
        return GS2_HEADER + self._client_first_bare

    def client_final(self, server_first: bytes) -> bytes:
        """Check the server-first-message and answer with the client-final-message (proof)."""
        self._expect(_State.SENT_CLIENT_FIRST)
        server_nonce, salt, iterations = self._parse_server_first(server_first)
        self._keys = self._cache.keys(self._mechanism, self._password, salt, iterations)
        without_proof = b"c=" + base64.b64encode(GS2_HEADER) + b",r=" + server_nonce.encode()
        self._auth_message = b",".join(
            (self._client_first_bare, bytes(server_first), without_proof)
        )
        signature = _hmac(self._mechanism, self._keys.stored_key, self._auth_message)
        proof = bytes(a ^ b for a, b in zip(self._keys.client_key, signature, strict=True))
        self._state = _State.SENT_CLIENT_FINAL
        return without_proof + b",p=" + base64.b64encode(proof)

    def verify_server_final(self, server_final: bytes) -> None:
        """Check the server-final-message: ``v=`` must be the expected server signature."""
        self._expect(_State.SENT_CLIENT_FINAL)
        attributes = parse_attributes(server_final, "server-final-message")
        if "e" in attributes:
            raise OperationFailure(f"SCRAM: the server reported an error: {attributes['e']}")
        received = _b64decode(attributes.get("v"), "server signature")
        keys = self._keys
        if keys is None:  # unreachable: client_final ran, _expect saw to that
            raise InvalidOperation("SCRAM: no keys derived before the server-final-message")
        expected = _hmac(self._mechanism, keys.server_key, self._auth_message)
        if not hmac.compare_digest(received, expected):
            raise OperationFailure("Server returned an invalid signature.")
        self._state = _State.DONE

    def _parse_server_first(self, server_first: bytes) -> tuple[str, bytes, int]:
        attributes = parse_attributes(server_first, "server-first-message")
        if "m" in attributes:
            raise OperationFailure("SCRAM: the server requires an unsupported extension (m=)")
        if "e" in attributes:
            raise OperationFailure(f"SCRAM: the server reported an error: {attributes['e']}")
        server_nonce = attributes.get("r")
        if server_nonce is None or "s" not in attributes or "i" not in attributes:
            raise OperationFailure("SCRAM: malformed server-first-message (needs r, s and i)")
        if not server_nonce.startswith(self._nonce) or len(server_nonce) == len(self._nonce):
            raise OperationFailure("Server returned an invalid nonce.")
        salt = _b64decode(attributes["s"], "salt")
        raw_iterations = attributes["i"]
        if not (raw_iterations.isascii() and raw_iterations.isdigit()):
            raise OperationFailure("Server returned an invalid iteration count.")
        iterations = int(raw_iterations)
        if iterations < MIN_ITERATIONS:
            raise OperationFailure(
                f"Server returned an invalid iteration count: {iterations} is below the "
                f"minimum of {MIN_ITERATIONS}."
            )
        return server_nonce, salt, iterations

    def _expect(self, state: _State) -> None:
        if self._state is not state:
            raise InvalidOperation(
                f"SCRAM conversation is in state {self._state.value!r}, not {state.value!r}"
            )

    def __repr__(self) -> str:
        return f"<ScramClient {self._mechanism.value} {self._state.value}>"


def _hmac(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.digest(key, message, mechanism.hash_name)


def _b64decode(value: str | None, what: str) -> bytes:
    if not value:
        raise OperationFailure(f"SCRAM: the server sent no {what}")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise OperationFailure(f"SCRAM: the server sent an invalid {what} (not base64)") from None
