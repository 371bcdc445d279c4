"""AWS Signature Version 4 as pure functions (the time comes in as an argument).

The steps of AWS's "Create a signed AWS API request": a canonical request, the string to
sign over its hash, a signing key derived from the secret, the date, the region and the
service, and the ``Authorization`` header carrying the signature. MONGODB-AWS signs an STS
``GetCallerIdentity`` request with it; the functions are general enough for AWS's published
SigV4 test suite, which the tests check them against.
"""

from __future__ import annotations

import hashlib
import hmac
import posixpath
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

__all__ = [
    "ALGORITHM",
    "AwsCredentials",
    "SignedRequest",
    "amz_date",
    "authorization_header",
    "canonical_request",
    "sign",
    "signing_key",
    "string_to_sign",
]

ALGORITHM = "AWS4-HMAC-SHA256"
_UNRESERVED = "-_.~"


@dataclass(frozen=True, slots=True)
class AwsCredentials:
    """An access key ID, its secret, and the session token of temporary credentials.

    ``expiration`` (UTC) is set for temporary credentials. Only the access key ID is shown.
    """

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    expiration: datetime | None = None

    def expires_within(self, now: datetime, seconds: float) -> bool:
        """Whether these (temporary) credentials expire less than ``seconds`` after ``now``."""
        if self.expiration is None:
            return False
        return (self.expiration - now).total_seconds() < seconds


@dataclass(frozen=True, slots=True)
class SignedRequest:
    """What signing produced: the headers to send (``Authorization`` included)."""

    authorization: str
    amz_date: str
    headers: Mapping[str, str]


def amz_date(now: datetime) -> str:
    """``X-Amz-Date`` for ``now``: ``YYYYMMDD'T'HHMMSS'Z'`` in UTC."""
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def _quote(text: str) -> str:
    """RFC 3986 percent-encoding of everything but the unreserved characters."""
    return urllib.parse.quote(text, safe=_UNRESERVED)


def canonical_path(path: str) -> str:
    """The path normalised (``.``, ``..`` and empty segments resolved), each segment encoded."""
    if not path:
        return "/"
    normalised = posixpath.normpath(path)
    if normalised.startswith("//"):
        normalised = "/" + normalised.lstrip("/")
    if path.endswith("/") and normalised != "/":
        normalised += "/"
    return "/".join(_quote(urllib.parse.unquote(part)) for part in normalised.split("/"))


def canonical_query(query: str) -> str:
    """The query's parameters encoded and sorted by name, then value."""
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    encoded = sorted((_quote(name), _quote(value)) for name, value in pairs)
    return "&".join(f"{name}={value}" for name, value in encoded)


def _canonical_headers(headers: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """(canonical headers block, signed headers): names lower-cased and sorted, values
    trimmed with inner runs of spaces collapsed, repeated headers joined by commas."""
    merged: dict[str, list[str]] = {}
    for name, value in headers:
        merged.setdefault(name.lower().strip(), []).append(" ".join(value.split()))
    names = sorted(merged)
    block = "".join(f"{name}:{','.join(merged[name])}\n" for name in names)
    return block, ";".join(names)


def canonical_request(
    method: str, path: str, query: str, headers: Iterable[tuple[str, str]], body: bytes
) -> tuple[str, str]:
    """The canonical request and its signed-headers list."""
    block, signed = _canonical_headers(headers)
    request = "\n".join(
        [method.upper(), canonical_path(path), canonical_query(query), block, signed, _hash(body)]
    )
    return request, signed


def credential_scope(date: str, region: str, service: str) -> str:
    return f"{date[:8]}/{region}/{service}/aws4_request"


def string_to_sign(date: str, scope: str, request: str) -> str:
    """``AWS4-HMAC-SHA256``, the date, the scope and the canonical request's hash."""
    return "\n".join([ALGORITHM, date, scope, _hash(request.encode())])


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    """HMAC chain over ``AWS4<secret>``: the date (``YYYYMMDD``), region, service, terminator."""
    key = _hmac(f"AWS4{secret}".encode(), date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def authorization_header(access_key_id: str, scope: str, signed: str, signature: str) -> str:
    return (
        f"{ALGORITHM} Credential={access_key_id}/{scope}, "
        f"SignedHeaders={signed}, Signature={signature}"
    )


def sign(
    credentials: AwsCredentials,
    *,
    method: str,
    host: str,
    path: str = "/",
    query: str = "",
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    body: bytes = b"",
    region: str,
    service: str,
    now: datetime,
) -> SignedRequest:
    """Sign a request made at ``now``: ``Host``, ``X-Amz-Date`` and (temporary credentials)
    ``X-Amz-Security-Token`` are added to ``headers`` and signed with them."""
    date = amz_date(now)
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    names = {name.lower() for name, _ in items}
    if "host" not in names:
        items.append(("Host", host))
    items.append(("X-Amz-Date", date))
    if credentials.session_token is not None:
        items.append(("X-Amz-Security-Token", credentials.session_token))
    request, signed = canonical_request(method, path, query, items, body)
    scope = credential_scope(date, region, service)
    key = signing_key(credentials.secret_access_key, date, region, service)
    signature = hmac.new(key, string_to_sign(date, scope, request).encode(), "sha256").hexdigest()
    authorization = authorization_header(credentials.access_key_id, scope, signed, signature)
    return SignedRequest(authorization, date, dict(items))
