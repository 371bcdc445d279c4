"""On-demand KMS credentials (client-side encryption spec, "Automatic Credentials"): an empty
``aws``, ``azure`` or ``gcp`` entry in ``kms_providers`` is filled in when libmongocrypt asks.

- ``aws``: the ``credential_providers["aws"]`` callable if given, else MONGODB-AWS's
  credential chain (web identity, environment, ECS, EC2 metadata);
- ``azure``: an access token from the Azure Instance Metadata Service, cached until a minute
  before it expires ("Obtaining an Access Token for Azure Key Vault");
- ``gcp``: an access token from the GCP metadata server ("Obtaining GCP Credentials").

The endpoints are the module attributes :data:`AZURE_IMDS_URL` and :data:`GCP_TOKEN_URL`,
read at each call, so tests point them at a local server. Each request is bounded by ten
seconds, over the driver's one asyncio HTTP client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from asyncmongo.core.http import HttpError, HttpRequest, Url
from asyncmongo.errors import ConfigurationError, ConnectionFailure, OperationFailure
from asyncmongo.runtime import http
from asyncmongo.runtime.aws_credentials import fetch_aws_credentials

__all__ = ["AZURE_IMDS_URL", "GCP_TOKEN_URL", "azure_access_token", "on_demand_credentials"]

AZURE_IMDS_URL = "http://169.254.169.254/metadata/identity/oauth2/token"
GCP_TOKEN_URL = ("http://metadata.google.internal/computeMetadata/v1/instance/"
                 "service-accounts/default/token")
_REQUEST_SECONDS = 10.0

#: (token, the loop time it expires at): the spec's cachedAzureAccessToken.
_azure_cache: tuple[str, float] | None = None


async def on_demand_credentials(
    kms_providers: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    credential_providers: Mapping[str, Callable[[], Any]] | None = None,
) -> dict[str, Any]:
    """NEED_KMS_CREDENTIALS: ``kms_providers`` with each empty aws, azure or gcp entry filled
    in (aws by ``credential_providers["aws"]`` when given: spec, "credentialProviders");
    another empty provider is refused by name."""
    providers = {name: dict(value) for name, value in kms_providers.items()}
    for name, value in providers.items():
        if value:
            continue
        if name == "aws":
            providers[name] = await _aws(environ, (credential_providers or {}).get("aws"))
        elif name == "azure":
            providers[name] = {"accessToken": await azure_access_token()}
        elif name == "gcp":
            providers[name] = {"accessToken": await _gcp_access_token()}
        else:
            raise ConfigurationError(
                f"on-demand {name!r} KMS credentials are not supported: give them in "
                f"kms_providers[{name!r}]")
    return providers


async def _aws(environ: Mapping[str, str] | None,
               provider: Callable[[], Any] | None) -> dict[str, Any]:
    """The AWS chain MONGODB-AWS uses; a custom provider takes its first step (the
    mechanism property ``AWS_CREDENTIAL_PROVIDER``), so both accept the same results."""
    properties = {} if provider is None else {"AWS_CREDENTIAL_PROVIDER": provider}
    try:
        fetched = await fetch_aws_credentials(properties, environ=environ)
    except (ConfigurationError, OperationFailure) as exc:
        raise ConfigurationError(f"on-demand 'aws' KMS credentials: {exc}") from exc
    aws = fetched.credentials
    credentials = {"accessKeyId": aws.access_key_id, "secretAccessKey": aws.secret_access_key}
    if aws.session_token is not None:
        credentials["sessionToken"] = aws.session_token
    return credentials


async def azure_access_token() -> str:
    """The managed identity's token for Key Vault: the cached one while more than a minute
    from expiry, else a new one from IMDS."""
    global _azure_cache
    loop = asyncio.get_running_loop()
    if _azure_cache is not None and _azure_cache[1] - loop.time() > 60:
        return _azure_cache[0]
    started = loop.time()
    query = urlencode({"api-version": "2018-02-01", "resource": "https://vault.azure.net"})
    document = await _token_document(
        "azure", f"{AZURE_IMDS_URL}?{query}", {"Metadata": "true", "Accept": "application/json"})
    try:
        expires_in = float(document["expires_in"])
    except (KeyError, TypeError, ValueError):
        raise ConfigurationError(
            f"on-demand 'azure' KMS credentials: IMDS gave no usable expires_in: {document}"
        ) from None
    token = str(document["access_token"])
    _azure_cache = (token, started + expires_in)
    return token


async def _gcp_access_token() -> str:
    document = await _token_document("gcp", GCP_TOKEN_URL, {"Metadata-Flavor": "Google"})
    return str(document["access_token"])


async def _token_document(provider: str, url: str, headers: dict[str, str]) -> dict[str, Any]:
    """The JSON answer of a metadata service, which must hold ``access_token``; any failure
    is a ConfigurationError naming the provider and including the body (spec)."""
    where = f"on-demand {provider!r} KMS credentials from {url.split('?')[0]}"
    deadline = asyncio.get_running_loop().time() + _REQUEST_SECONDS
    try:
        response = await http.request(HttpRequest("GET", Url.parse(url), headers),
                                      deadline=deadline)
    except (ConnectionFailure, HttpError) as exc:
        raise ConfigurationError(f"{where}: no answer ({exc})") from exc
    body = response.body.decode("utf-8", "replace")
    if response.status != 200:
        raise ConfigurationError(f"{where}: HTTP {response.status}: {body[:500]}")
    try:
        document = json.loads(body)
    except ValueError:
        raise ConfigurationError(f"{where}: not JSON: {body[:500]}") from None
    if not isinstance(document, dict) or not isinstance(document.get("access_token"), str):
        raise ConfigurationError(f"{where}: no access_token in {body[:500]}")
    return document
