"""The SCRAM client state machine against the RFC 5802 / RFC 7677 vectors and the auth spec's
MongoDB example, its refusals of bad server messages, and the key cache."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from asyncmongo.core.auth.scram import (
    MIN_ITERATIONS,
    ScramCache,
    ScramClient,
    ScramMechanism,
    escape_username,
    generate_nonce,
    mongo_password_digest,
    prepare_password,
    unescape_username,
)
from asyncmongo.errors import ConfigurationError, InvalidOperation, OperationFailure
from tests.auth.support import CountingPbkdf2

SHA1 = ScramMechanism.SCRAM_SHA_1
SHA256 = ScramMechanism.SCRAM_SHA_256

# RFC 5802 section 5 (SCRAM-SHA-1, password "pencil" used as is).
RFC5802: dict[str, Any] = {
    "nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    b"p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}
# RFC 7677 section 3 (SCRAM-SHA-256); also the auth spec's SCRAM-SHA-256 example.
RFC7677: dict[str, Any] = {
    "nonce": "rOprNGfwEbeRWgbNEkqO",
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}
# The auth spec's SCRAM-SHA-1 conversation: MongoDB's MD5 digest is the password.
MONGODB_SHA1: dict[str, Any] = {
    "nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
    b"s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
    b"p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
    "server_final": b"v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
}


def _client(mechanism: ScramMechanism, vector: dict[str, Any], password: bytes) -> ScramClient:
    return ScramClient(mechanism, "user", password, nonce=vector["nonce"])


@pytest.mark.parametrize(
    ("mechanism", "vector", "password"),
    [
        (SHA1, RFC5802, b"pencil"),
        (SHA256, RFC7677, b"pencil"),
        (SHA1, MONGODB_SHA1, mongo_password_digest("user", "pencil").encode()),
        (SHA256, RFC7677, prepare_password(SHA256, "user", "pencil")),
    ],
    ids=["rfc5802-sha1", "rfc7677-sha256", "mongodb-sha1-digest", "mongodb-sha256-saslprep"],
)
def test_scram_matches_the_test_vectors(
    mechanism: ScramMechanism, vector: dict[str, Any], password: bytes
) -> None:
    client = _client(mechanism, vector, password)
    assert client.client_first() == vector["client_first"]
    assert client.client_final(vector["server_first"]) == vector["client_final"]
    assert not client.done
    client.verify_server_final(vector["server_final"])
    assert client.done


def test_mongodb_sha1_password_digest() -> None:
    # HEX(MD5("user:mongo:pencil")), the auth spec's SCRAM-SHA-1 password.
    assert mongo_password_digest("user", "pencil") == "1c33006ec1ffd90f9cadcbcc0e118200"
    assert prepare_password(SHA1, "user", "pencil") == b"1c33006ec1ffd90f9cadcbcc0e118200"
    # No SASLprep for SCRAM-SHA-1, SASLprep (only) for SCRAM-SHA-256.
    assert prepare_password(SHA1, "user", "I\u00adX") != prepare_password(SHA1, "user", "IX")
    assert prepare_password(SHA256, "user", "I\u00adX") == b"IX"
    assert prepare_password(SHA256, "user", "\u2168") == b"IX"


def test_wrong_server_signature_is_refused() -> None:
    client = _client(SHA256, RFC7677, b"pencil")
    client.client_first()
    client.client_final(RFC7677["server_first"])
    bad = b"v=" + base64.b64encode(b"\x00" * 32)
    with pytest.raises(OperationFailure, match="invalid signature"):
        client.verify_server_final(bad)
    assert not client.done


def test_server_signature_of_the_wrong_password_is_refused() -> None:
    client = _client(SHA256, RFC7677, b"pencil2")
    client.client_first()
    client.client_final(RFC7677["server_first"])
    with pytest.raises(OperationFailure, match="invalid signature"):
        client.verify_server_final(RFC7677["server_final"])


@pytest.mark.parametrize(
    "server_first",
    [
        b"r=somebodyelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  # does not extend ours
        b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  # adds nothing
        b"r=rOprNGfwEbeRWgbNEk,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  # a prefix of ours
    ],
)
def test_server_nonce_must_extend_the_client_nonce(server_first: bytes) -> None:
    client = _client(SHA256, RFC7677, b"pencil")
    client.client_first()
    with pytest.raises(OperationFailure, match="invalid nonce"):
        client.client_final(server_first)


@pytest.mark.parametrize("mechanism", [SHA1, SHA256])
@pytest.mark.parametrize("iterations", ["4095", "1", "0", "-4096", "x", ""])
def test_too_few_or_bad_iterations_are_refused(mechanism: ScramMechanism, iterations: str) -> None:
    client = ScramClient(mechanism, "user", b"pencil", nonce="abc")
    client.client_first()
    with pytest.raises(OperationFailure, match="iteration count"):
        client.client_final(f"r=abcdef,s=c2FsdA==,i={iterations}".encode())


def test_minimum_iteration_count_is_accepted() -> None:
    client = ScramClient(SHA256, "user", b"pencil", nonce="abc")
    client.client_first()
    assert client.client_final(f"r=abcdef,s=c2FsdA==,i={MIN_ITERATIONS}".encode())


@pytest.mark.parametrize(
    ("server_first", "message"),
    [
        (b"", "malformed"),
        (b"garbage", "malformed"),
        (b"r=abcdef,s=c2FsdA==", "needs r, s and i"),
        (b"r=abcdef,i=4096", "needs r, s and i"),
        (b"s=c2FsdA==,i=4096", "needs r, s and i"),
        (b"r=abcdef,s=not base64!,i=4096", "not base64"),
        (b"r=abcdef,s=,i=4096", "no salt"),
        (b"r=abcdef,r=abcdeg,s=c2FsdA==,i=4096", "malformed"),
        (b"m=ext,r=abcdef,s=c2FsdA==,i=4096", "extension"),
        (b"e=other-error", "server reported an error"),
        (b"r=abc\xffdef,s=c2FsdA==,i=4096", "UTF-8"),
        (b"rr=abcdef,s=c2FsdA==,i=4096", "malformed"),
    ],
)
def test_malformed_server_first_is_refused(server_first: bytes, message: str) -> None:
    client = ScramClient(SHA256, "user", b"pencil", nonce="abc")
    client.client_first()
    with pytest.raises(OperationFailure, match=message):
        client.client_final(server_first)


@pytest.mark.parametrize(
    ("server_final", "message"),
    [
        (b"e=invalid-proof", "server reported an error: invalid-proof"),
        (b"v=", "no server signature"),
        (b"x=1", "no server signature"),
        (b"v=@@@", "not base64"),
        (b"", "malformed"),
    ],
)
def test_malformed_server_final_is_refused(server_final: bytes, message: str) -> None:
    client = _client(SHA256, RFC7677, b"pencil")
    client.client_first()
    client.client_final(RFC7677["server_first"])
    with pytest.raises(OperationFailure, match=message):
        client.verify_server_final(server_final)


def test_steps_out_of_order_are_programming_errors() -> None:
    client = ScramClient(SHA256, "user", b"pencil", nonce="abc")
    with pytest.raises(InvalidOperation):
        client.client_final(b"r=abcdef,s=c2FsdA==,i=4096")
    client.client_first()
    with pytest.raises(InvalidOperation):
        client.client_first()
    with pytest.raises(InvalidOperation):
        client.verify_server_final(b"v=AAAA")


@pytest.mark.parametrize("nonce", ["", "a,b", "caf\u00e9", "a\nb"])
def test_bad_injected_nonce_is_a_configuration_error(nonce: str) -> None:
    with pytest.raises(ConfigurationError):
        ScramClient(SHA256, "user", b"pencil", nonce=nonce)


def test_generated_nonces_are_fresh_and_valid() -> None:
    nonces = {generate_nonce() for _ in range(100)}
    assert len(nonces) == 100
    for nonce in nonces:
        assert nonce.isascii() and nonce.isprintable() and "," not in nonce
        assert len(nonce) >= 32


def test_usernames_are_escaped_not_saslprepped() -> None:
    assert escape_username("a=b,c") == "a=3Db=2Cc"
    assert unescape_username("a=3Db=2Cc") == "a=b,c"
    assert escape_username("\u2168") == "\u2168"
    client = ScramClient(SHA256, "a=b,c", b"pencil", nonce="abc")
    assert client.client_first() == b"n,,n=a=3Db=2Cc,r=abc"
    for bad in ("a=b", "=2=3DC", "a,b", "=", "=2"):
        with pytest.raises(OperationFailure):
            unescape_username(bad)
    assert unescape_username("=3D2C") == "=2C"



def _run_rfc7677(cache: ScramCache, password: bytes = b"pencil") -> None:
    client = ScramClient(SHA256, "user", password, nonce=str(RFC7677["nonce"]), cache=cache)
    client.client_first()
    client.client_final(RFC7677["server_first"])


def test_cache_skips_pbkdf2_for_the_same_password_salt_and_iterations() -> None:
    pbkdf2 = CountingPbkdf2()
    cache = ScramCache(pbkdf2=pbkdf2)
    _run_rfc7677(cache)
    _run_rfc7677(cache)
    _run_rfc7677(cache)
    assert pbkdf2.calls == 1
    stats = cache.statistics()
    assert (stats.entries, stats.hits, stats.misses) == (1, 2, 1)
    assert repr(cache) == "<ScramCache 1 entries, 2 hits, 1 misses>"
    _run_rfc7677(cache, password=b"other")  # another password is another entry
    assert pbkdf2.calls == 2


def test_cache_key_includes_salt_iterations_and_mechanism() -> None:
    pbkdf2 = CountingPbkdf2()
    cache = ScramCache(pbkdf2=pbkdf2)
    cache.keys(SHA256, b"pw", b"salt", 4096)
    cache.keys(SHA256, b"pw", b"salt", 4096)
    cache.keys(SHA256, b"pw", b"salt2", 4096)
    cache.keys(SHA256, b"pw", b"salt", 5000)
    cache.keys(SHA1, b"pw", b"salt", 4096)
    assert pbkdf2.calls == 4


def test_cache_is_bounded_least_recently_used_first() -> None:
    pbkdf2 = CountingPbkdf2()
    cache = ScramCache(max_entries=2, pbkdf2=pbkdf2)
    cache.keys(SHA256, b"a", b"salt", 4096)
    cache.keys(SHA256, b"b", b"salt", 4096)
    cache.keys(SHA256, b"a", b"salt", 4096)  # a is now the most recent
    cache.keys(SHA256, b"c", b"salt", 4096)  # evicts b
    assert cache.statistics().entries == 2
    cache.keys(SHA256, b"a", b"salt", 4096)
    assert pbkdf2.calls == 3
    cache.keys(SHA256, b"b", b"salt", 4096)
    assert pbkdf2.calls == 4
    with pytest.raises(ConfigurationError):
        ScramCache(max_entries=0)


def test_cached_keys_hide_secrets_in_repr() -> None:
    keys = ScramCache().keys(SHA256, b"pencil", b"salt", 4096)
    assert "pencil" not in repr(keys)
    assert keys.salted_password.hex() not in repr(keys)
