"""A test identity provider for MONGODB-OIDC: signs access tokens, and checks them as mongod
does (signature, expiry, audience, issuer).

The simulated server verifies the ``jwt`` of a ``JwtStepRequest`` with
:meth:`TestIdentityProvider.verify`: a bad signature, an expired token, another audience or
issuer is an AuthenticationFailed (18). A connection authenticated with a token that expires
later gets ReauthenticationRequired (391) for its next command, so reauthentication can be
tested with :meth:`TestIdentityProvider.mint_token` and a short ``expires_in``.

Signatures: RS256 (RSASSA-PKCS1-v1_5 with SHA-256, a fresh 2048-bit key per provider) when
the ``cryptography`` package is installed, else HS256 with a test secret (:data:`TEST_SECRET`).
:attr:`TestIdentityProvider.algorithm` says which.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.errors import OperationFailure

__all__ = [
    "DEFAULT_AUDIENCE",
    "DEFAULT_ISSUER",
    "TEST_SECRET",
    "TestIdentityProvider",
    "mint_token",
]

DEFAULT_ISSUER = "https://issuer.asyncmongo.test"
DEFAULT_AUDIENCE = "asyncmongo-test-audience"
DEFAULT_CLIENT_ID = "asyncmongo-test-client"
#: The HS256 key when ``cryptography`` is not installed.
TEST_SECRET = b"asyncmongo-oidc-test-secret-not-for-production"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class _Signer:
    """RS256 with a fresh RSA key, or HS256 with the test secret."""

    def __init__(self) -> None:
        self.private_key: Any = None
        try:
            from cryptography.hazmat.primitives.asymmetric import rsa
        except ImportError:
            self.algorithm = "HS256"
            return
        self.algorithm = "RS256"
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def sign(self, message: bytes) -> bytes:
        if self.private_key is None:
            return hmac.digest(TEST_SECRET, message, "sha256")
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        signature: bytes = self.private_key.sign(message, padding.PKCS1v15(), hashes.SHA256())
        return signature

    def verify(self, message: bytes, signature: bytes) -> bool:
        if self.private_key is None:
            return hmac.compare_digest(hmac.digest(TEST_SECRET, message, "sha256"), signature)
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            self.private_key.public_key().verify(
                signature, message, padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """What the server learns from a good token: the principal and when it expires."""

    subject: str
    expires_at: float
    claims: Mapping[str, Any] = field(repr=False)


class TestIdentityProvider:
    """The simulator's IdP: one key, one issuer, one audience (``clientId`` and
    ``requestScopes`` are what a human-flow saslStart answers as the IdpInfo).

    ``clock`` (``time.time`` by default) is when "now" is, for expiry.
    """

    __test__ = False  # not a pytest class

    def __init__(
        self,
        *,
        issuer: str = DEFAULT_ISSUER,
        audience: str = DEFAULT_AUDIENCE,
        client_id: str | None = DEFAULT_CLIENT_ID,
        request_scopes: list[str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.client_id = client_id
        self.request_scopes = request_scopes
        self.clock = clock
        self._signer = _Signer()
        self._key_id = secrets.token_hex(8)

    @property
    def algorithm(self) -> str:
        """``RS256`` (cryptography installed) or ``HS256`` (the test secret)."""
        return self._signer.algorithm

    def idp_info(self) -> dict[str, Any]:
        """The IdpInfo document of the two-step conversation's first reply."""
        info: dict[str, Any] = {"issuer": self.issuer}
        if self.client_id is not None:
            info["clientId"] = self.client_id
        if self.request_scopes is not None:
            info["requestScopes"] = list(self.request_scopes)
        return info

    def mint_token(
        self,
        subject: str = "test_user1",
        *,
        expires_in: float = 3600.0,
        audience: str | None = None,
        issuer: str | None = None,
        extra_claims: Mapping[str, Any] | None = None,
    ) -> str:
        """A signed compact JWT for ``subject`` expiring ``expires_in`` seconds from now
        (negative: already expired); ``audience``/``issuer`` override the provider's, to
        make tokens the server must refuse."""
        now = self.clock()
        header = {"alg": self.algorithm, "typ": "JWT", "kid": self._key_id}
        claims: dict[str, Any] = {
            "iss": self.issuer if issuer is None else issuer,
            "aud": self.audience if audience is None else audience,
            "sub": subject,
            "iat": int(now),
            "exp": now + expires_in,
            "jti": secrets.token_hex(8),
            **(extra_claims or {}),
        }
        signing_input = (
            _b64(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64(json.dumps(claims, separators=(",", ":")).encode())
        )
        signature = self._signer.sign(signing_input.encode("ascii"))
        return signing_input + "." + _b64(signature)

    def verify(self, token: str) -> VerifiedToken:
        """Check a compact JWT as mongod does; OperationFailure 18 when it is not good."""
        parts = token.split(".")
        if len(parts) != 3:
            raise _refused("the token is not a compact JWT")
        try:
            header = json.loads(_unb64(parts[0]))
            claims = json.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except (ValueError, UnicodeDecodeError):
            raise _refused("the token is not valid JSON/base64url") from None
        if not isinstance(header, dict) or header.get("alg") != self.algorithm:
            raise _refused(f"the token is not signed with {self.algorithm}")
        if not self._signer.verify(f"{parts[0]}.{parts[1]}".encode("ascii"), signature):
            raise _refused("bad token signature")
        if not isinstance(claims, dict):
            raise _refused("the token's claims are not an object")
        if claims.get("iss") != self.issuer:
            raise _refused(f"unexpected issuer {claims.get('iss')!r}")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.audience not in audiences:
            raise _refused(f"unexpected audience {audience!r}")
        expires = claims.get("exp")
        if not isinstance(expires, int | float) or expires <= self.clock():
            raise _refused("the token has expired")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise _refused("the token has no subject")
        return VerifiedToken(subject, float(expires), claims)

    def __repr__(self) -> str:
        return (
            f"<TestIdentityProvider {self.algorithm} issuer={self.issuer!r} "
            f"aud={self.audience!r}>"
        )


def _refused(reason: str) -> OperationFailure:
    # mongod logs the reason and answers the client only "Authentication failed."
    return OperationFailure(
        "Authentication failed.", 18, {"codeName": "AuthenticationFailed", "reason": reason}
    )


def mint_token(
    provider: TestIdentityProvider, subject: str = "test_user1", *, expires_in: float = 3600.0
) -> str:
    """``provider.mint_token(subject, expires_in=...)``, as a function."""
    return provider.mint_token(subject, expires_in=expires_in)

