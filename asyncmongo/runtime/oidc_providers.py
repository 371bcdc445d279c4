"""The built-in MONGODB-OIDC environments (auth spec, "Built-in OIDC Environment
Integrations"), each a machine callback: ``test`` (the file named by OIDC_TOKEN_FILE), ``k8s``
(a service-account token file), ``azure`` (the Instance Metadata Service) and ``gcp`` (the VM
metadata server). None of them caches: the authenticator caches their tokens as it caches a
user's callback's.

The metadata endpoints are the module attributes :data:`AZURE_IMDS_URL` and
:data:`GCP_METADATA_URL`, read at each call, so tests can point them at a local server.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from asyncmongo.core.auth.oidc import OIDCCallback, OIDCCallbackContext, OIDCCallbackResult
from asyncmongo.core.http import HttpError, HttpRequest, Url
from asyncmongo.errors import ConfigurationError, ConnectionFailure, OperationFailure
from asyncmongo.runtime import http

__all__ = [
    "AZURE_IMDS_URL",
    "GCP_METADATA_URL",
    "K8S_DEFAULT_TOKEN_FILE",
    "AzureCallback",
    "GcpCallback",
    "TokenFileCallback",
    "environment_callback",
]

AZURE_IMDS_URL = "http://169.254.169.254/metadata/identity/oauth2/token"
GCP_METADATA_URL = (
    "http://metadata/computeMetadata/v1/instance/service-accounts/default/identity"
)
K8S_DEFAULT_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class TokenFileCallback(OIDCCallback):
    """Reads the access token from a file: ``test`` (OIDC_TOKEN_FILE) and ``k8s``
    (AZURE_FEDERATED_TOKEN_FILE, else AWS_WEB_IDENTITY_TOKEN_FILE, else the service-account
    token path). The path is looked up at each call; the file is small and local."""

    def __init__(self, environment: str, environ: Mapping[str, str] | None = None) -> None:
        self.environment = environment
        self._environ = environ

    def path(self) -> str:
        environ = os.environ if self._environ is None else self._environ
        if self.environment == "test":
            path = environ.get("OIDC_TOKEN_FILE")
            if not path:
                raise ConfigurationError(
                    "MONGODB-OIDC ENVIRONMENT:test needs OIDC_TOKEN_FILE set to a token file"
                )
            return path
        for name in ("AZURE_FEDERATED_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE"):
            if name in environ:
                return environ[name]
        return K8S_DEFAULT_TOKEN_FILE

    def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
        path = self.path()
        try:
            with open(path, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as exc:
            raise OperationFailure(
                f"MONGODB-OIDC ENVIRONMENT:{self.environment}: cannot read the token file "
                f"{path!r}: {exc.strerror or exc}"
            ) from exc
        return OIDCCallbackResult(token)


class AzureCallback(OIDCCallback):
    """Azure IMDS: ``GET .../oauth2/token?api-version=2018-02-01&resource=<TOKEN_RESOURCE>
    [&client_id=<username>]`` with ``Accept: application/json`` and ``Metadata: true``."""

    def __init__(self, resource: str, client_id: str | None) -> None:
        self.resource = resource
        self.client_id = client_id

    def url(self) -> str:
        query: dict[str, str] = {"api-version": "2018-02-01", "resource": self.resource}
        if self.client_id is not None:
            query["client_id"] = self.client_id
        return f"{AZURE_IMDS_URL}?{urlencode(query, quote_via=quote)}"

    async def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
        headers = {"Accept": "application/json", "Metadata": "true"}
        body = await _get("azure", self.url(), headers, context.timeout_seconds)
        try:
            answer: Any = json.loads(body)
            token = answer["access_token"]
        except (ValueError, KeyError, TypeError) as exc:
            raise OperationFailure(
                f"MONGODB-OIDC ENVIRONMENT:azure: the IMDS answer has no access_token: "
                f"{body[:200]!r}"
            ) from exc
        expires = answer.get("expires_in")
        try:
            expires_in = float(expires) if expires is not None else None
        except (TypeError, ValueError):
            expires_in = None
        return OIDCCallbackResult(str(token), expires_in)


class GcpCallback(OIDCCallback):
    """GCP metadata: ``GET .../identity?audience=<TOKEN_RESOURCE>`` with
    ``Metadata-Flavor: Google``; the body is the token."""

    def __init__(self, resource: str) -> None:
        self.resource = resource

    def url(self) -> str:
        return f"{GCP_METADATA_URL}?{urlencode({'audience': self.resource}, quote_via=quote)}"

    async def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
        headers = {"Metadata-Flavor": "Google"}
        body = await _get("gcp", self.url(), headers, context.timeout_seconds)
        return OIDCCallbackResult(body.strip())


async def _get(environment: str, url: str, headers: dict[str, str], seconds: float) -> str:
    """The body of a 200 answer within ``seconds`` (the callback's timeout); anything else is
    an error that includes the body (spec)."""
    deadline = asyncio.get_running_loop().time() + seconds
    try:
        response = await http.request(HttpRequest("GET", Url.parse(url), headers),
                                      deadline=deadline)
    except (ConnectionFailure, HttpError) as exc:
        raise OperationFailure(
            f"MONGODB-OIDC ENVIRONMENT:{environment}: no answer from {url.split('?')[0]} "
            f"({exc.__class__.__name__}: {exc}); is this running in {environment} with a "
            "managed identity?"
        ) from exc
    text = response.body.decode("utf-8", "replace")
    if response.status != 200:
        raise OperationFailure(
            f"MONGODB-OIDC ENVIRONMENT:{environment}: {url.split('?')[0]} answered "
            f"{response.status}: {text[:500]}"
        )
    return text


def environment_callback(
    properties: Mapping[str, Any], username: str | None
) -> OIDCCallback:
    """The machine callback of the credential's ENVIRONMENT property."""
    environment = properties.get("ENVIRONMENT")
    if environment in ("test", "k8s"):
        return TokenFileCallback(environment)
    resource = str(properties.get("TOKEN_RESOURCE", ""))
    if environment == "azure":
        return AzureCallback(resource, username)
    if environment == "gcp":
        return GcpCallback(resource)
    raise ConfigurationError(f"MONGODB-OIDC: unknown ENVIRONMENT {environment!r}")
