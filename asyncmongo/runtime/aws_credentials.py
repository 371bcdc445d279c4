"""Where MONGODB-AWS credentials come from at authentication time (auth spec, "Obtaining
Credentials"), in the spec's order.

Implemented: the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``), read afresh for every authentication so credentials another part of
the application refreshes are used. Not implemented yet, and reported as such rather than
skipped: a custom ``AWS_CREDENTIAL_PROVIDER``, AssumeRoleWithWebIdentity, the ECS container
endpoint and EC2 instance metadata.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from asyncmongo.core.auth.aws import credentials_from_environment
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.errors import ConfigurationError, OperationFailure

__all__ = ["fetch_aws_credentials"]


async def fetch_aws_credentials(
    mechanism_properties: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> AwsCredentials:
    """Credentials for one MONGODB-AWS authentication (``environ``: ``os.environ``)."""
    if "AWS_CREDENTIAL_PROVIDER" in mechanism_properties:
        raise ConfigurationError(
            "MONGODB-AWS: AWS_CREDENTIAL_PROVIDER is not supported yet; set AWS_ACCESS_KEY_ID "
            "and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the environment instead"
        )
    environ = os.environ if environ is None else environ
    credentials = credentials_from_environment(environ)
    if credentials is not None:
        return credentials
    pending = [
        name
        for name in ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        if environ.get(name)
    ]
    hint = f" ({', '.join(pending)} set, but not supported yet)" if pending else ""
    raise OperationFailure(
        "MONGODB-AWS: no AWS credentials found: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are "
        f"not set in the environment{hint}; web identity, ECS and EC2 instance credentials are "
        "not supported yet"
    )
