"""An authentication failure that says what to check.

The server's refusal is a bare "Authentication failed." (code 18, AuthenticationFailed: mongod
tells a client no more). :func:`explain_failure` puts around it what the driver knows: the
mechanism, the user (never the password or secret key), where the credentials came from, and
the usual causes for that mechanism. The code, the server's reply and the labels are kept, so
the error is handled as before.
"""

from __future__ import annotations

from typing import Protocol

from asyncmongo.errors import OperationFailure

__all__ = ["explain_failure"]

AUTHENTICATION_FAILED = 18


class _Credential(Protocol):
    @property
    def source(self) -> str | None: ...

    @property
    def username(self) -> str | None: ...


def _advice(mechanism: str, credential: _Credential) -> str:
    source = credential.source
    if mechanism.startswith("SCRAM-"):
        return (
            f"Check the username and password, and that the user was created in the "
            f"authSource database ({source!r}): a user of another database needs "
            "authSource=<that database>."
        )
    if mechanism == "PLAIN":
        return (
            "Check the username and password, and that the server's external authentication "
            "(LDAP) knows this user; PLAIN authenticates against authSource '$external'."
        )
    if mechanism == "MONGODB-X509":
        return (
            "Check that the client certificate (tlsCertificateKeyFile) is the one intended and "
            "that its subject, exactly as in the certificate (RFC 2253 order), is a user of "
            "the '$external' database."
        )
    if mechanism == "MONGODB-AWS":
        return (
            "Check that the IAM user or role behind these credentials has a user in the "
            "'$external' database (named by its ARN), that the credentials are neither expired "
            "nor revoked, and that this machine's clock is right (the request is signed with "
            "the time)."
        )
    return "Check the credential and the server's users for this mechanism."


def _who(mechanism: str, credential: _Credential, access_key_id: str | None) -> str:
    if mechanism == "MONGODB-AWS":
        return f"access key ID {access_key_id!r}" if access_key_id else "AWS credentials"
    if credential.username is None:
        return "the client certificate's subject" if mechanism == "MONGODB-X509" else "no user"
    return f"user {credential.username!r}"


def explain_failure(
    exc: OperationFailure,
    mechanism: str,
    credential: _Credential,
    origin: str | None,
    access_key_id: str | None = None,
) -> OperationFailure:
    """``exc`` (raised by an authentication conversation) with a message naming the
    mechanism, the user (the access key ID for MONGODB-AWS), the credentials' ``origin`` and,
    when the server refused them (code 18), what to check."""
    where = f"credentials from {origin}" if origin else f"authSource {credential.source!r}"
    reason = exc.details.get("errmsg") if exc.details else None
    if not isinstance(reason, str):
        reason = exc.args[0] if exc.args else "failed"
    code = f" (code {exc.code}{' ' + exc.code_name if exc.code_name else ''})" if exc.code else ""
    message = (
        f"{mechanism} authentication failed for {_who(mechanism, credential, access_key_id)} "
        f"({where}): {reason}{code}"
    )
    if exc.code == AUTHENTICATION_FAILED:
        message += ". " + _advice(mechanism, credential)
    return OperationFailure(message, exc.code, exc.details, exc.error_labels)
