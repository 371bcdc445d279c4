"""MongoCredential: who authenticates, how, and against which database (specs/auth).

``build_credential`` applies the auth spec's per-mechanism rules once, at configuration time:
required and forbidden fields, the default ``source`` ("$external", the URI database or
"admin"), the allowed mechanism properties and their values. Anything else raises
ConfigurationError there, not at the first authentication. The password is never shown by
``repr`` nor put into an error message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from asyncmongo.errors import ConfigurationError

__all__ = ["MECHANISMS", "MongoCredential", "build_credential"]

GSSAPI = "GSSAPI"
MONGODB_X509 = "MONGODB-X509"
PLAIN = "PLAIN"
SCRAM_SHA_1 = "SCRAM-SHA-1"
SCRAM_SHA_256 = "SCRAM-SHA-256"
MONGODB_AWS = "MONGODB-AWS"
MONGODB_OIDC = "MONGODB-OIDC"

#: The mechanisms of the auth spec ("Supported Authentication Methods").
MECHANISMS = frozenset(
    {GSSAPI, MONGODB_X509, PLAIN, SCRAM_SHA_1, SCRAM_SHA_256, MONGODB_AWS, MONGODB_OIDC}
)

EXTERNAL = "$external"
_CANONICALIZE_VALUES = frozenset({"none", "forward", "forwardAndReverse", "true", "false"})
_OIDC_ENVIRONMENTS = frozenset({"test", "azure", "gcp", "k8s"})
_OIDC_TOKEN_RESOURCE_ENVIRONMENTS = frozenset({"azure", "gcp"})
_OIDC_USERNAME_ENVIRONMENTS = frozenset({"azure"})


@dataclass(frozen=True, slots=True)
class MongoCredential:
    """A validated credential.

    ``mechanism`` None means "negotiate" (SCRAM-SHA-256 or SCRAM-SHA-1, chosen from the
    handshake's ``saslSupportedMechs``). ``source`` is the authentication database.
    ``mechanism_properties`` keys are upper-case (the spec makes them case-insensitive).
    """

    mechanism: str | None
    source: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    mechanism_properties: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __repr__(self) -> str:
        hidden = None if self.password is None else "<hidden>"
        return (
            f"MongoCredential(mechanism={self.mechanism!r}, source={self.source!r}, "
            f"username={self.username!r}, password={hidden}, "
            f"mechanism_properties={dict(self.mechanism_properties)!r})"
        )


def build_credential(
    *,
    mechanism: str | None,
    username: str | None,
    password: str | None,
    source: str | None,
    database: str | None,
    mechanism_properties: Mapping[str, Any] | None,
    userinfo_given: bool,
) -> MongoCredential | None:
    """Apply the auth spec's rules; None when authentication was not configured.

    Authentication is configured by userinfo (an ``@`` in the URI, even with empty parts) or
    an explicit mechanism; ``authSource`` or a URI database alone never configure it (spec:
    "Authentication source and URI database do not imply authentication").
    """
    if source == "":
        raise ConfigurationError("authSource must not be empty")
    if mechanism is None and not userinfo_given and username is None:
        return None
    if mechanism is not None:
        mechanism = mechanism.upper()
        if mechanism not in MECHANISMS:
            raise ConfigurationError(
                f"unknown authMechanism {mechanism!r}; supported: {sorted(MECHANISMS)}"
            )
    properties = {str(key).upper(): value for key, value in (mechanism_properties or {}).items()}
    fields = _Fields(mechanism, username, password, source, database, properties)
    _RULES[mechanism](fields)
    return MongoCredential(
        mechanism=mechanism,
        source=fields.source or "admin",
        username=username,
        password=password,
        mechanism_properties=MappingProxyType(fields.properties),
    )


@dataclass(slots=True)
class _Fields:
    """The credential under construction; rule functions check it and fill defaults."""

    mechanism: str | None
    username: str | None
    password: str | None
    source: str | None
    database: str | None
    properties: dict[str, Any]

    def fail(self, message: str) -> ConfigurationError:
        return ConfigurationError(f"{self.mechanism or 'default authentication'}: {message}")

    def require_username(self) -> None:
        if not self.username:
            raise self.fail("a non-empty username is required")

    def require_password(self) -> None:
        if self.password is None:
            raise self.fail("a password is required")

    def forbid_password(self) -> None:
        if self.password is not None:
            raise self.fail("a password must not be given")

    def external_source(self) -> None:
        if self.source is None:
            self.source = EXTERNAL
        elif self.source != EXTERNAL:
            raise self.fail(f"authSource must be '$external', not {self.source!r}")

    def database_source(self, fallback: str) -> None:
        if self.source is None:
            self.source = self.database or fallback

    def require_objects(self, *names: str) -> None:
        """Properties that are code (callbacks, providers, host lists): a connection string
        can only give text, so a ``str`` here means it came from the URI."""
        for name in names:
            if isinstance(self.properties.get(name), str):
                raise self.fail(f"{name} must be given in code, not in the connection string")

    def allow_properties(self, *names: str) -> None:
        unknown = sorted(set(self.properties) - set(names))
        if unknown:
            allowed = ", ".join(names) if names else "none"
            raise self.fail(f"unsupported authMechanismProperties {unknown} (allowed: {allowed})")


def _negotiated(f: _Fields) -> None:
    # The URI may carry a user without a password (connection-string spec: valid userinfo);
    # the SCRAM conversation asks for it when it starts.
    f.require_username()
    f.database_source("admin")
    f.allow_properties()


def _scram(f: _Fields) -> None:
    f.require_username()
    f.require_password()
    f.database_source("admin")
    f.allow_properties()


def _plain(f: _Fields) -> None:
    f.require_username()
    f.require_password()
    f.database_source(EXTERNAL)
    f.allow_properties()


def _x509(f: _Fields) -> None:
    f.forbid_password()
    f.external_source()
    f.allow_properties()


def _gssapi(f: _Fields) -> None:
    f.require_username()
    f.external_source()
    f.allow_properties("SERVICE_NAME", "CANONICALIZE_HOST_NAME", "SERVICE_REALM", "SERVICE_HOST")
    f.properties.setdefault("SERVICE_NAME", "mongodb")
    canonicalize = f.properties.get("CANONICALIZE_HOST_NAME")
    if isinstance(canonicalize, bool):
        canonicalize = "forwardAndReverse" if canonicalize else "none"
        f.properties["CANONICALIZE_HOST_NAME"] = canonicalize
    if canonicalize is not None and canonicalize not in _CANONICALIZE_VALUES:
        raise f.fail(
            f"CANONICALIZE_HOST_NAME must be one of {sorted(_CANONICALIZE_VALUES)}, "
            f"not {canonicalize!r}"
        )


def _aws(f: _Fields) -> None:
    # Auth spec 2025-09-30: AWS credentials come from the environment or the AWS SDK; "if
    # credentials are provided in the URI or client options, the driver MUST raise an error".
    if f.username is not None or f.password is not None:
        raise f.fail("credentials must come from the environment, not a username/password")
    f.external_source()
    if "AWS_SESSION_TOKEN" in f.properties:
        raise f.fail("AWS_SESSION_TOKEN must come from the environment, not the options")
    f.allow_properties("AWS_CREDENTIAL_PROVIDER")
    f.require_objects("AWS_CREDENTIAL_PROVIDER")


def _oidc(f: _Fields) -> None:
    f.forbid_password()
    f.external_source()
    f.allow_properties(
        "ENVIRONMENT", "TOKEN_RESOURCE", "OIDC_CALLBACK", "OIDC_HUMAN_CALLBACK", "ALLOWED_HOSTS"
    )
    # ALLOWED_HOSTS "MUST NOT be allowed in the URI connection string"; callbacks are code.
    f.require_objects("OIDC_CALLBACK", "OIDC_HUMAN_CALLBACK", "ALLOWED_HOSTS")
    props = f.properties
    environment = props.get("ENVIRONMENT")
    callbacks = [name for name in ("OIDC_CALLBACK", "OIDC_HUMAN_CALLBACK") if name in props]
    if len(callbacks) > 1:
        raise f.fail("give OIDC_CALLBACK or OIDC_HUMAN_CALLBACK, not both")
    if environment is None and not callbacks:
        raise f.fail("an ENVIRONMENT or an OIDC callback is required")
    if "ALLOWED_HOSTS" in props:
        # The host check guards the human flow only (spec: ALLOWED_HOSTS).
        if "OIDC_HUMAN_CALLBACK" not in props:
            raise f.fail("ALLOWED_HOSTS applies only with OIDC_HUMAN_CALLBACK")
        hosts = props["ALLOWED_HOSTS"]
        if not isinstance(hosts, list | tuple) or not all(isinstance(h, str) for h in hosts):
            raise f.fail("ALLOWED_HOSTS must be a list of host names")
    if environment is None:
        return
    if callbacks:
        raise f.fail(f"ENVIRONMENT cannot be combined with {callbacks[0]}")
    if environment not in _OIDC_ENVIRONMENTS:
        allowed = sorted(_OIDC_ENVIRONMENTS)
        raise f.fail(f"ENVIRONMENT must be one of {allowed}, not {environment!r}")
    needs_resource = environment in _OIDC_TOKEN_RESOURCE_ENVIRONMENTS
    if needs_resource != ("TOKEN_RESOURCE" in props):
        state = "is required" if needs_resource else "is not allowed"
        raise f.fail(f"TOKEN_RESOURCE {state} with ENVIRONMENT {environment!r}")
    if f.username is not None and environment not in _OIDC_USERNAME_ENVIRONMENTS:
        raise f.fail(f"a username is not allowed with ENVIRONMENT {environment!r}")


_RULES: dict[str | None, Callable[[_Fields], None]] = {
    None: _negotiated,
    SCRAM_SHA_1: _scram,
    SCRAM_SHA_256: _scram,
    PLAIN: _plain,
    MONGODB_X509: _x509,
    GSSAPI: _gssapi,
    MONGODB_AWS: _aws,
    MONGODB_OIDC: _oidc,
}
