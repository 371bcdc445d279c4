"""MONGODB-AWS for the simulated deployments: the server's half of the conversation, which
verifies the SigV4 signature as STS would, and simulated AWS endpoints on 127.0.0.1 that hand
out temporary credentials (STS AssumeRoleWithWebIdentity, the ECS container endpoint, EC2
instance metadata with IMDSv2).

mongod replays the client's signed ``GetCallerIdentity`` request to STS; the simulator knows the
test secrets instead (:meth:`UserDirectory.add_aws_user
<asyncmongo.testing.scram.UserDirectory.add_aws_user>`), recomputes the signature over the
request it expects (its own nonce, STS host and body) and refuses with code 18
(AuthenticationFailed) anything else: an unknown access key, a wrong secret, a missing or wrong
session token, expired credentials, a date more than 15 minutes off, a wrong region::

    users = UserDirectory()
    credentials = temporary_credentials()
    users.add_aws_user("arn:aws:iam::123456789012:role/app", credentials)
    async with Standalone(users=users) as db, SimulatedImds(credentials) as imds:
        os.environ["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url
        client = AsyncMongoClient(db.uri, authMechanism="MONGODB-AWS")

The endpoints' ``credentials`` attribute may be replaced between requests (rotation), and each
counts what it served.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import json
import re
import secrets
import ssl
import string
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from asyncmongo.bson.codec import decode, encode
from asyncmongo.core.auth.aws import STS_BODY, sts_region
from asyncmongo.core.auth.sigv4 import AwsCredentials, sign
from asyncmongo.errors import OperationFailure
from asyncmongo.testing.tcp_service import TcpService

U = TypeVar("U")
#: The server's AWS identities: an access key ID's user and its known credentials, or None.
KeyLookup = Callable[[str], "tuple[U, AwsCredentials] | None"]

__all__ = [
    "AwsServerConversation",
    "HttpExchange",
    "SimulatedEcs",
    "SimulatedImds",
    "SimulatedSts",
    "temporary_credentials",
]

#: STS refuses a request signed more than 15 minutes away from its own clock.
MAX_CLOCK_SKEW = timedelta(minutes=15)
_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/sts/"
    r"aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=[0-9a-f]{64}"
)
_REQUIRED_SIGNED = frozenset(
    {"content-length", "content-type", "host", "x-amz-date", "x-mongodb-gs2-cb-flag",
     "x-mongodb-server-nonce"}
)


def temporary_credentials(
    *, expires_in: timedelta = timedelta(hours=1), now: datetime | None = None
) -> AwsCredentials:
    """Fresh random temporary credentials (``ASIA...`` key, secret, session token) that expire
    ``expires_in`` after ``now``."""
    key_id = "ASIA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))
    expiration = (now or datetime.now(UTC)).replace(microsecond=0) + expires_in
    return AwsCredentials(
        key_id, secrets.token_urlsafe(30), secrets.token_urlsafe(60), expiration
    )


def _auth_failed(reason: str) -> OperationFailure:
    # mongod says no more than this to the client; the reason is for the simulator's reader.
    return OperationFailure(
        "Authentication failed.", 18, {"codeName": "AuthenticationFailed", "reason": reason}
    )


class AwsServerConversation(Generic[U]):
    """mongod's half of one MONGODB-AWS conversation (verification done locally):
    ``lookup`` finds an access key ID's user and known credentials, ``sts_host`` is the host
    the server names, ``rng(n)`` gives the server nonce's random bytes."""

    __slots__ = ("_host", "_lookup", "_server_nonce", "user")

    def __init__(self, lookup: KeyLookup[U], sts_host: str, client_first: bytes,
                 rng: Callable[[int], bytes]) -> None:
        try:
            document = decode(client_first)
        except Exception:
            raise _auth_failed("unreadable client-first message") from None
        nonce, flag = document.get("r"), document.get("p")
        if not isinstance(nonce, bytes) or len(nonce) != 32 or flag not in (110, 121):
            raise _auth_failed("bad client nonce or gs2-cb-flag")
        self._lookup = lookup
        self._server_nonce = nonce + rng(32)
        self._host = sts_host
        self.user: U | None = None

    def server_first(self) -> bytes:
        return encode({"s": self._server_nonce, "h": self._host})

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        if self.user is not None:
            raise OperationFailure("MONGODB-AWS: unexpected message after the conversation", 17)
        try:
            message = decode(payload)
        except Exception:
            raise _auth_failed("unreadable client-final message") from None
        self.user = self._verify(message)
        return b"", True

    def _verify(self, message: Mapping[str, Any]) -> U:
        authorization, date, token = message.get("a"), message.get("d"), message.get("t")
        if not isinstance(authorization, str) or not isinstance(date, str):
            raise _auth_failed("no authorization header or date")
        match = _AUTHORIZATION.fullmatch(authorization)
        if match is None:
            raise _auth_failed("malformed authorization header")
        entry = self._lookup(match["key"])
        if entry is None:
            raise _auth_failed("unknown access key ID")
        user, known = entry
        try:
            signed_at = datetime.strptime(date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise _auth_failed("bad X-Amz-Date") from None
        now = datetime.now(UTC)
        if abs(now - signed_at) > MAX_CLOCK_SKEW or match["date"] != date[:8]:
            raise _auth_failed("signature date outside the allowed clock skew")
        if known.expiration is not None and now >= known.expiration:
            raise _auth_failed("expired credentials")
        if match["region"] != sts_region(self._host):
            raise _auth_failed("wrong region")
        if token != known.session_token:
            raise _auth_failed("missing or wrong session token")
        if not _REQUIRED_SIGNED <= set(match["signed"].split(";")):
            raise _auth_failed("required headers not signed")
        expected = sign(
            known, method="POST", host=self._host, region=match["region"], service="sts",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Content-Length": str(len(STS_BODY)),
                "X-MongoDB-Server-Nonce": _b64(self._server_nonce),
                "X-MongoDB-GS2-CB-Flag": "n",
            },
            body=STS_BODY, now=signed_at,
        )
        if not hmac.compare_digest(expected.authorization, authorization):
            raise _auth_failed("signature mismatch")
        return user


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- simulated AWS endpoints -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HttpExchange:
    """One request an endpoint received and the status it answered."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    status: int = 0
    params: Mapping[str, str] = field(default_factory=dict)


class _Endpoint(TcpService):
    """An HTTP/1.1 server on 127.0.0.1 answering one request per connection."""

    name = "endpoint"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(host=host, port=port, ssl_context=ssl_context)
        #: Every request, in order, with the status it got.
        self.exchanges: list[HttpExchange] = []
        #: When set, every request is answered with this status (an outage).
        self.fail_with: int | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}: {len(self.exchanges)} requests>"

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        try:
            exchange = await _read_request(reader)
            headers: dict[str, str] = {}
            if self.fail_with is not None:
                status, body = self.fail_with, b"simulated outage"
            else:
                status, headers, body = self.answer(exchange)
            self.exchanges.append(_with_status(exchange, status))
            head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
                    f"Content-Length: {len(body)}", "Connection: close"]
            head += [f"{name}: {value}" for name, value in headers.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def answer(self, exchange: HttpExchange) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error",
            503: "Service Unavailable"}


async def _read_request(reader: asyncio.StreamReader) -> HttpExchange:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    lines = head.split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    path, _, query = target.partition("?")
    params = dict(urllib.parse.parse_qsl(query))
    if headers.get("content-type") == "application/x-www-form-urlencoded":
        params.update(urllib.parse.parse_qsl(body.decode()))
    return HttpExchange(method, path, headers, body, params=params)


def _with_status(exchange: HttpExchange, status: int) -> HttpExchange:
    return HttpExchange(exchange.method, exchange.path, exchange.headers, exchange.body,
                        status, exchange.params)


def _json(status: int, document: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(document).encode()


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimulatedSts(_Endpoint):
    """STS's AssumeRoleWithWebIdentity: exchanges ``web_identity_token`` for ``role_arn``'s
    ``credentials`` (STS's JSON, Expiration in epoch seconds). Give ``ssl_context`` to serve
    HTTPS, as STS does."""

    def __init__(self, credentials: AwsCredentials, *, web_identity_token: str, role_arn: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.credentials = credentials
        self.web_identity_token = web_identity_token
        self.role_arn = role_arn

    def answer(self, exchange: HttpExchange) -> tuple[int, dict[str, str], bytes]:
        params = exchange.params
        action, version = params.get("Action"), params.get("Version")
        if action != "AssumeRoleWithWebIdentity" or version != "2011-06-15":
            return _sts_error(400, "InvalidAction", "unsupported action or version")
        if not params.get("RoleSessionName"):
            return _sts_error(400, "ValidationError", "RoleSessionName is required")
        if params.get("RoleArn") != self.role_arn:
            return _sts_error(403, "AccessDenied", "not authorized to assume this role")
        if not hmac.compare_digest(params.get("WebIdentityToken", ""), self.web_identity_token):
            return _sts_error(400, "InvalidIdentityToken", "the web identity token is not valid")
        credentials = self.credentials
        expiration = credentials.expiration
        document = {"AssumeRoleWithWebIdentityResponse": {"AssumeRoleWithWebIdentityResult": {
            "Credentials": {
                "AccessKeyId": credentials.access_key_id,
                "SecretAccessKey": credentials.secret_access_key,
                "SessionToken": credentials.session_token,
                "Expiration": expiration.timestamp() if expiration else None,
            },
            "AssumedRoleUser": {"Arn": f"{self.role_arn}/{params['RoleSessionName']}"},
        }}}
        return _json(200, document)


def _sts_error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    return _json(status, {"Error": {"Code": code, "Message": message, "Type": "Sender"}})


class SimulatedEcs(_Endpoint):
    """The ECS container credentials endpoint: ``GET <relative_uri>`` answers ``credentials``."""

    def __init__(self, credentials: AwsCredentials, *,
                 relative_uri: str = "/v2/credentials/test-task", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.credentials = credentials
        self.relative_uri = relative_uri

    def answer(self, exchange: HttpExchange) -> tuple[int, dict[str, str], bytes]:
        if exchange.method != "GET" or exchange.path != self.relative_uri:
            return _json(404, {"message": "not found"})
        credentials = self.credentials
        return _json(200, {
            "AccessKeyId": credentials.access_key_id,
            "Expiration": _iso(credentials.expiration),
            "RoleArn": "arn:aws:iam::123456789012:role/ecs-task",
            "SecretAccessKey": credentials.secret_access_key,
            "Token": credentials.session_token,
        })


class SimulatedImds(_Endpoint):
    """EC2 instance metadata, IMDSv2 only: ``PUT /latest/api/token`` (with the TTL header)
    gives a session token that the role-name and credentials GETs must carry (401 without)."""

    def __init__(self, credentials: AwsCredentials, *, role: str = "test-role",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.credentials = credentials
        self.role = role
        self._tokens: set[str] = set()

    def answer(self, exchange: HttpExchange) -> tuple[int, dict[str, str], bytes]:
        if exchange.path == "/latest/api/token":
            return self._token(exchange)
        if exchange.headers.get("x-aws-ec2-metadata-token") not in self._tokens:
            return 401, {}, b""
        if exchange.method != "GET":
            return 405, {}, b""
        if exchange.path == "/latest/meta-data/iam/security-credentials/":
            return 200, {"Content-Type": "text/plain"}, self.role.encode()
        if exchange.path == f"/latest/meta-data/iam/security-credentials/{self.role}":
            credentials = self.credentials
            return _json(200, {
                "Code": "Success",
                "LastUpdated": _iso(datetime.now(UTC)),
                "Type": "AWS-HMAC",
                "AccessKeyId": credentials.access_key_id,
                "SecretAccessKey": credentials.secret_access_key,
                "Token": credentials.session_token,
                "Expiration": _iso(credentials.expiration),
            })
        return 404, {}, b""

    def _token(self, exchange: HttpExchange) -> tuple[int, dict[str, str], bytes]:
        if exchange.method != "PUT":
            return 405, {}, b""
        ttl = exchange.headers.get("x-aws-ec2-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return 400, {}, b""
        token = secrets.token_urlsafe(32)
        self._tokens.add(token)
        return 200, {"Content-Type": "text/plain"}, token.encode()
