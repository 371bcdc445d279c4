"""Custom KMS credential providers: the ``credential_providers`` option of
AsyncClientEncryption and AutoEncryptionOpts (client-side encryption spec,
"credentialProviders"; PyMongo's name).

``credential_providers={"aws": provider}`` replaces the default AWS credential chain when an
empty ``kms_providers["aws"]`` is filled on demand. ``provider`` is called (plain or async)
each time libmongocrypt asks for credentials, and may return what a MONGODB-AWS
``AWS_CREDENTIAL_PROVIDER`` returns (the two share
:func:`asyncmongo.runtime.aws_credentials.fetch_aws_credentials`): ``AwsCredentials``, a
mapping with ``AccessKeyId`` / ``SecretAccessKey`` [/ ``SessionToken``], botocore
credentials, or an object with ``username`` / ``password`` [/ ``token``].

Only ``aws`` is defined by the spec. A provider given for ``aws`` while ``kms_providers``
does not ask for on-demand AWS credentials (an empty ``aws`` entry) is a configuration
error, raised when the options are made: the provider would otherwise silently be ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from asyncmongo.errors import ConfigurationError

__all__ = ["CredentialProviders", "validate_credential_providers"]

#: Provider name (``"aws"``) -> a callable returning credentials (or an awaitable of them).
CredentialProviders: TypeAlias = Mapping[str, Callable[[], Any]]

SUPPORTED = frozenset({"aws"})


def validate_credential_providers(
    credential_providers: CredentialProviders | None, kms_providers: Mapping[str, Any],
) -> dict[str, Callable[[], Any]]:
    """``credential_providers`` as a dict, checked against ``kms_providers``: only ``aws``,
    callable, and only with an empty ``kms_providers["aws"]`` (spec: "if the kmsProviders
    are not configured for automatic credential fetching an error MUST be thrown")."""
    if credential_providers is None:
        return {}
    if not isinstance(credential_providers, Mapping):
        raise ConfigurationError(
            f"credential_providers must be a mapping such as {{'aws': provider}}, not "
            f"{type(credential_providers).__name__}")
    unsupported = sorted(set(credential_providers) - SUPPORTED)
    if unsupported:
        raise ConfigurationError(
            f"credential_providers: only 'aws' is supported, not {unsupported}")
    for name, provider in credential_providers.items():
        if not callable(provider):
            raise ConfigurationError(
                f"credential_providers[{name!r}] must be callable, not "
                f"{type(provider).__name__}")
        entry = kms_providers.get(name)
        if not (isinstance(entry, Mapping) and not entry):
            raise ConfigurationError(
                f"credential_providers[{name!r}] is given, so kms_providers[{name!r}] must "
                f"be empty ({{}}) for the provider to fill it on demand; it is {_shown(entry)}")
    return dict(credential_providers)


def _shown(entry: Any) -> str:
    """The kms_providers entry, without its secrets: absent, or its field names."""
    if entry is None:
        return "absent"
    if isinstance(entry, Mapping):
        return f"set ({', '.join(sorted(map(str, entry)))})"
    return type(entry).__name__
