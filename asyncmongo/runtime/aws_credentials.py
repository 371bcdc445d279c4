"""Where MONGODB-AWS credentials come from at authentication time (auth spec, "Credential
Fetching Order"), in the spec's order:

1. a custom ``AWS_CREDENTIAL_PROVIDER`` (a callable, plain or async), called every time;
2. the cache of credentials fetched from AWS endpoints, while more than five minutes from
   their expiry (spec, "Caching Credentials": once cached, they are used even if the
   environment variables appear later);
3. ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN``, read afresh
   every time and never cached;
4. AssumeRoleWithWebIdentity when ``AWS_WEB_IDENTITY_TOKEN_FILE`` and ``AWS_ROLE_ARN`` are set
   (``AWS_ROLE_SESSION_NAME`` or a random session name);
5. the ECS container endpoint when ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` is set, else
   EC2 instance metadata (IMDSv2).

The HTTP requests are :mod:`asyncmongo.runtime.http`'s, each bounded by ten seconds and by the
connection's deadline; the endpoints are :class:`~asyncmongo.core.auth.aws_sources.AwsEndpoints`'
(from the environment). The web identity token file is read directly: a small local file,
like the CA files TLS loads.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from asyncmongo.core.auth.aws import credentials_from_environment, parse_credentials_document
from asyncmongo.core.auth.aws_sources import (
    REQUEST_TIMEOUT_SECONDS,
    AwsCredentialCache,
    AwsEndpoints,
    SourcedCredentials,
    assume_role_with_web_identity_request,
    ecs_request,
    imds_credentials_request,
    imds_role_request,
    imds_token_request,
    parse_role_name,
    read_credentials_response,
)
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.core.http import HttpError, HttpRequest, HttpResponse
from asyncmongo.errors import ConfigurationError, ConnectionFailure, OperationFailure
from asyncmongo.runtime import http

__all__ = ["credentials_from_provider", "fetch_aws_credentials"]

ENVIRONMENT_SOURCE = "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"


async def fetch_aws_credentials(
    mechanism_properties: Mapping[str, Any],
    cache: AwsCredentialCache | None = None,
    *,
    deadline: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> SourcedCredentials:
    """Credentials for one MONGODB-AWS authentication (``environ``: ``os.environ``;
    ``deadline``: loop time, bounding every request)."""
    provider = mechanism_properties.get("AWS_CREDENTIAL_PROVIDER")
    if provider is not None:
        return await _from_provider(provider)
    now = datetime.now(UTC)
    cache = cache if cache is not None else AwsCredentialCache()
    cached = cache.get(now)
    if cached is not None:
        return cached
    environ = os.environ if environ is None else environ
    credentials = credentials_from_environment(environ)
    if credentials is not None:
        return SourcedCredentials(credentials, ENVIRONMENT_SOURCE)
    fetched = await _from_aws(environ, AwsEndpoints.from_environment(environ), deadline)
    cache.put(fetched)
    return fetched


async def _from_aws(
    environ: Mapping[str, str], endpoints: AwsEndpoints, deadline: float | None
) -> SourcedCredentials:
    token_file = environ.get("AWS_WEB_IDENTITY_TOKEN_FILE")
    role_arn = environ.get("AWS_ROLE_ARN")
    if token_file and role_arn:
        return await _web_identity(environ, endpoints, token_file, role_arn, deadline)
    relative_uri = environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    if relative_uri:
        source = f"the ECS container endpoint ({endpoints.ecs}{relative_uri})"
        response = await _send(ecs_request(endpoints, relative_uri), source, endpoints, deadline)
        return SourcedCredentials(read_credentials_response(response, source), source)
    half = bool(token_file or role_arn)
    return await _instance_metadata(endpoints, deadline, half_web_identity=half)


async def _web_identity(
    environ: Mapping[str, str],
    endpoints: AwsEndpoints,
    token_file: str,
    role_arn: str,
    deadline: float | None,
) -> SourcedCredentials:
    source = f"AssumeRoleWithWebIdentity at {endpoints.sts} for role {role_arn}"
    token = _read_token_file(token_file)
    session_name = environ.get("AWS_ROLE_SESSION_NAME") or f"asyncmongo-{secrets.token_hex(8)}"
    request = assume_role_with_web_identity_request(
        endpoints, token=token, role_arn=role_arn, session_name=session_name
    )
    response = await _send(request, source, endpoints, deadline)
    return SourcedCredentials(read_credentials_response(response, source), source)


def _read_token_file(path: str) -> str:
    """The web identity token: a local file of a few kilobytes (on EKS a projected volume in
    memory), read at once like the CA files TLS loads; asyncio has no file I/O to wait on,
    and the rules allow no thread."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(64 * 1024).strip()
    except OSError as exc:
        raise OperationFailure(
            f"MONGODB-AWS: cannot read AWS_WEB_IDENTITY_TOKEN_FILE {path!r}: "
            f"{exc.strerror or exc}"
        ) from None


async def _instance_metadata(
    endpoints: AwsEndpoints, deadline: float | None, *, half_web_identity: bool
) -> SourcedCredentials:
    source = f"EC2 instance metadata ({endpoints.imds})"
    try:
        response = await _send(imds_token_request(endpoints), source, endpoints, deadline)
    except OperationFailure as exc:
        web_identity = (
            "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set"
            if half_web_identity
            else "no web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN)"
        )
        raise OperationFailure(
            "MONGODB-AWS: no AWS credentials found: no AWS_CREDENTIAL_PROVIDER, "
            f"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set, {web_identity}, no ECS "
            f"endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI), and {source} could not be "
            f"reached ({exc.__cause__}). Set the environment variables, or run where one "
            "of these sources is available."
        ) from None
    if not response.ok:
        raise OperationFailure(
            f"MONGODB-AWS: {source} refused an IMDSv2 session token: HTTP {response.status}"
        )
    token = response.body.decode("latin-1").strip()
    role_response = await _send(imds_role_request(endpoints, token), source, endpoints, deadline)
    role = parse_role_name(role_response, source)
    source = f"EC2 instance metadata ({endpoints.imds}) for role {role}"
    request = imds_credentials_request(endpoints, token, role)
    response = await _send(request, source, endpoints, deadline)
    return SourcedCredentials(read_credentials_response(response, source), source)


async def _send(
    request: HttpRequest, source: str, endpoints: AwsEndpoints, deadline: float | None
) -> HttpResponse:
    """One request, bounded by ten seconds and ``deadline``; failures name ``source``."""
    limit = asyncio.get_running_loop().time() + REQUEST_TIMEOUT_SECONDS
    deadline = limit if deadline is None else min(deadline, limit)
    try:
        return await http.request(request, deadline=deadline, ca_file=endpoints.ca_file)
    except (ConnectionFailure, HttpError) as exc:
        raise OperationFailure(f"MONGODB-AWS: {source} could not be reached: {exc}") from exc


async def _from_provider(provider: Any) -> SourcedCredentials:
    if not callable(provider):
        raise ConfigurationError(
            f"MONGODB-AWS: AWS_CREDENTIAL_PROVIDER must be callable, not {type(provider).__name__}"
        )
    name = getattr(provider, "__qualname__", None) or type(provider).__name__
    source = f"AWS_CREDENTIAL_PROVIDER {name}"
    result = provider()
    if inspect.isawaitable(result):
        result = await result
    return SourcedCredentials(credentials_from_provider(result, source), source)


def credentials_from_provider(value: Any, source: str) -> AwsCredentials:
    """What a custom provider returned, as credentials: an ``AwsCredentials``, a mapping with
    AWS's field names (``AccessKeyId``, ``SecretAccessKey``, ``SessionToken`` or ``Token``,
    ``Expiration``), an object with botocore's attributes (``access_key``, ``secret_key``,
    ``token``) or PyMongo's ``AwsCredential`` (``username``, ``password``, ``token``).
    botocore's refreshable credentials are read through ``get_frozen_credentials()``, so the
    three values belong to the same refresh."""
    if isinstance(value, AwsCredentials):
        return value
    frozen = getattr(value, "get_frozen_credentials", None)
    if callable(frozen):
        value = frozen()
    if isinstance(value, Mapping):
        if "SessionToken" in value or "Token" in value:
            return parse_credentials_document(value, source)
        key_id, secret = value.get("AccessKeyId"), value.get("SecretAccessKey")
        token, expiration = None, None
    else:
        key_id = getattr(value, "access_key", None) or getattr(value, "username", None)
        secret = getattr(value, "secret_key", None) or getattr(value, "password", None)
        token = getattr(value, "token", None)
        expiration = getattr(value, "expiration", None)
    if not (isinstance(key_id, str) and key_id and isinstance(secret, str) and secret):
        raise ConfigurationError(
            f"MONGODB-AWS: {source} returned {type(value).__name__}, without an access key ID "
            "and secret access key (AwsCredentials, a mapping with AccessKeyId and "
            "SecretAccessKey, or an object with access_key and secret_key)"
        )
    return AwsCredentials(
        key_id,
        secret,
        token if isinstance(token, str) and token else None,
        expiration if isinstance(expiration, datetime) else None,
    )
