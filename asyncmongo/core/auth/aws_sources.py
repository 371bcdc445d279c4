"""MONGODB-AWS credential sources as data (auth spec, "Obtaining Credentials"), pure.

The requests the driver makes for temporary credentials, the reading of their answers, where
the endpoints are, and the credential cache; ``asyncmongo.runtime.aws_credentials`` does the
I/O in the spec's order.

- AssumeRoleWithWebIdentity: a POST to STS (``https://sts.amazonaws.com``) with the token file's
  contents, ``AWS_ROLE_ARN`` and a session name, answered in JSON (``Accept``).
- The ECS container endpoint: ``http://169.254.170.2`` followed by
  ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI``.
- EC2 instance metadata, IMDSv2: a PUT for a session token, then the role name, then the
  role's credentials, both GETs carrying the token (``http://169.254.169.254``).

Where the endpoints are comes from the environment, with the AWS SDKs' names where they have
one: ``AWS_ENDPOINT_URL_STS`` (or ``AWS_ENDPOINT_URL``) for STS,
``AWS_EC2_METADATA_SERVICE_ENDPOINT`` for instance metadata, ``AWS_CA_BUNDLE`` for the CAs
that verify STS's certificate. The SDKs have no name for the ECS base address;
``ASYNCMONGO_AWS_ECS_ENDPOINT`` moves it (tests point all three at 127.0.0.1).

Cache (spec, "Caching Credentials"): credentials fetched from AWS endpoints are kept until
they are within five minutes of their ``Expiration``; credentials from the environment never
are; any authentication failure clears the cache.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asyncmongo.core.auth.aws import parse_credentials_document
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.core.http import HttpRequest, HttpResponse, Url
from asyncmongo.errors import ConfigurationError, OperationFailure

__all__ = [
    "CACHE_REFRESH_SECONDS",
    "AwsCredentialCache",
    "AwsEndpoints",
    "SourcedCredentials",
    "assume_role_with_web_identity_request",
    "ecs_request",
    "imds_credentials_request",
    "imds_role_request",
    "imds_token_request",
    "parse_role_name",
    "read_credentials_response",
]

DEFAULT_STS_ENDPOINT = "https://sts.amazonaws.com"
DEFAULT_ECS_ENDPOINT = "http://169.254.170.2"
DEFAULT_IMDS_ENDPOINT = "http://169.254.169.254"
#: Spec: credentials within five minutes of their Expiration are fetched again.
CACHE_REFRESH_SECONDS = 300
#: Spec: "a 10 second read timeout" for the ECS and EC2 endpoints (used for STS too).
REQUEST_TIMEOUT_SECONDS = 10.0
#: The lifetime asked of an IMDSv2 session token: it serves the two requests that follow.
IMDS_TOKEN_TTL_SECONDS = 30
STS_API_VERSION = "2011-06-15"


@dataclass(frozen=True, slots=True)
class SourcedCredentials:
    """Credentials and where they came from (``source``, for messages: never the secret)."""

    credentials: AwsCredentials
    source: str


@dataclass(frozen=True, slots=True)
class AwsEndpoints:
    """The base URLs of STS, the ECS container endpoint and EC2 instance metadata, and the
    CA file that verifies STS's certificate (None: the system's)."""

    sts: str = DEFAULT_STS_ENDPOINT
    ecs: str = DEFAULT_ECS_ENDPOINT
    imds: str = DEFAULT_IMDS_ENDPOINT
    ca_file: str | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> AwsEndpoints:
        """The endpoints ``environ`` names (see the module docstring), defaults otherwise."""
        return cls(
            sts=environ.get("AWS_ENDPOINT_URL_STS")
            or environ.get("AWS_ENDPOINT_URL")
            or DEFAULT_STS_ENDPOINT,
            ecs=environ.get("ASYNCMONGO_AWS_ECS_ENDPOINT") or DEFAULT_ECS_ENDPOINT,
            imds=environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or DEFAULT_IMDS_ENDPOINT,
            ca_file=environ.get("AWS_CA_BUNDLE") or None,
        )


def _base(url: str, name: str) -> Url:
    try:
        return Url.parse(url)
    except ValueError as exc:
        raise ConfigurationError(f"MONGODB-AWS: bad {name} endpoint: {exc}") from None


def assume_role_with_web_identity_request(
    endpoints: AwsEndpoints, *, token: str, role_arn: str, session_name: str
) -> HttpRequest:
    """The STS AssumeRoleWithWebIdentity call (an unsigned API: the token is the proof),
    its parameters form-encoded in the body so the token stays out of the URL."""
    body = urllib.parse.urlencode(
        {
            "Action": "AssumeRoleWithWebIdentity",
            "RoleSessionName": session_name,
            "RoleArn": role_arn,
            "WebIdentityToken": token,
            "Version": STS_API_VERSION,
        }
    ).encode()
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    return HttpRequest("POST", _base(endpoints.sts, "STS").join("/"), headers, body)


def ecs_request(endpoints: AwsEndpoints, relative_uri: str) -> HttpRequest:
    """GET ``<ECS endpoint><AWS_CONTAINER_CREDENTIALS_RELATIVE_URI>``."""
    return HttpRequest("GET", _base(endpoints.ecs, "ECS").join(relative_uri))


def imds_token_request(endpoints: AwsEndpoints) -> HttpRequest:
    """IMDSv2's session: ``PUT /latest/api/token`` with the token's lifetime."""
    headers = {"X-aws-ec2-metadata-token-ttl-seconds": str(IMDS_TOKEN_TTL_SECONDS)}
    return HttpRequest("PUT", _base(endpoints.imds, "EC2").join("/latest/api/token"), headers)


def imds_role_request(endpoints: AwsEndpoints, token: str) -> HttpRequest:
    """The instance's role name: ``GET /latest/meta-data/iam/security-credentials/``."""
    url = _base(endpoints.imds, "EC2").join("/latest/meta-data/iam/security-credentials/")
    return HttpRequest("GET", url, {"X-aws-ec2-metadata-token": token})


def imds_credentials_request(endpoints: AwsEndpoints, token: str, role: str) -> HttpRequest:
    """The role's credentials: ``GET /latest/meta-data/iam/security-credentials/<role>``."""
    path = "/latest/meta-data/iam/security-credentials/" + urllib.parse.quote(role, safe="")
    return HttpRequest("GET", _base(endpoints.imds, "EC2").join(path),
                       {"X-aws-ec2-metadata-token": token})


def _check_status(response: HttpResponse, source: str) -> None:
    if response.ok:
        return
    detail = ""
    try:
        error = json.loads(response.body).get("Error", {})
        if isinstance(error, Mapping):
            detail = f": {error.get('Code', '')} {error.get('Message', '')}".rstrip()
    except (ValueError, AttributeError):
        pass
    raise OperationFailure(
        f"MONGODB-AWS: {source} answered HTTP {response.status} {response.reason}{detail}"
    )


def parse_role_name(response: HttpResponse, source: str) -> str:
    """The first role the instance metadata lists (one per line)."""
    _check_status(response, source)
    names = response.body.decode("utf-8", "replace").split()
    if not names:
        raise OperationFailure(f"MONGODB-AWS: {source} lists no IAM role for this instance")
    return names[0]


def read_credentials_response(response: HttpResponse, source: str) -> AwsCredentials:
    """The credentials of a successful JSON answer; OperationFailure naming ``source``
    otherwise."""
    _check_status(response, source)
    try:
        document: Any = json.loads(response.body)
    except ValueError:
        raise OperationFailure(f"MONGODB-AWS: {source} answered no JSON") from None
    if not isinstance(document, Mapping):
        raise OperationFailure(f"MONGODB-AWS: {source} answered no credentials")
    return parse_credentials_document(document, source)


class AwsCredentialCache:
    """The temporary credentials last fetched from an AWS endpoint (one per client).

    Written in one assignment and read without a lock (spec: no lock around the request;
    concurrent handshakes may each fetch, the last answer wins).
    """

    __slots__ = ("_entry",)

    def __init__(self) -> None:
        self._entry: SourcedCredentials | None = None

    def get(self, now: datetime) -> SourcedCredentials | None:
        """The cached credentials if more than five minutes from expiring, else None."""
        entry = self._entry
        if entry is None or entry.credentials.expires_within(now, CACHE_REFRESH_SECONDS):
            return None
        return entry

    def put(self, entry: SourcedCredentials) -> None:
        """Keep ``entry`` if it has an Expiration (without one, there is no telling when to
        fetch again: it is used once)."""
        if entry.credentials.expiration is not None:
            self._entry = entry

    def clear(self) -> None:
        self._entry = None

    def __repr__(self) -> str:
        entry = self._entry
        if entry is None:
            return "<AwsCredentialCache empty>"
        return (
            f"<AwsCredentialCache {entry.credentials.access_key_id} from {entry.source}, "
            f"expires {entry.credentials.expiration}>"
        )
